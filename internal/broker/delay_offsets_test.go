package broker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A slave installs the delay offsets its master reported (GET_ALL_DELAY_OFFSET, served by
// internal/broker/admin over Broker.DelayOffsets) and writes them.
func TestSlaveInstallsDelayOffsets(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.DelayLevels = sbDelays })
	tb.retry.sched.setOffset(2, 9)
	if got := tb.DelayOffsets().OffsetTable[2]; got != 9 {
		t.Fatalf("DelayOffsets level 2 = %d, want 9", got)
	}
	slave := startTestBroker(t, func(o *Options) { o.BrokerID = 1; o.DelayLevels = sbDelays })
	if err := slave.updateDelayOffsets(tb.DelayOffsets()); err != nil {
		t.Fatal(err)
	}
	// The metadata writer saves them a few milliseconds later (persist.go).
	eventually(t, "slave's delayOffset.json", func() bool {
		return cmp.Equal(tb.DelayOffsets(), readDelayOffsets(t, slave.Dir))
	})
}
