package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
)

// A slave installs the delay offsets its master reported (GET_ALL_DELAY_OFFSET, served by
// internal/broker/admin from the schedule service) and writes them.
func TestSlaveInstallsDelayOffsets(t *testing.T) {
	tb := startTestBroker(t, func(o *Options) { o.Timers.DelayLevels = sbDelays })
	if err := tb.seams.updateDelayOffsets(protocol.DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{2: 9}}); err != nil {
		t.Fatal(err)
	}
	if got := tb.seams.delayOffsets().OffsetTable[2]; got != 9 {
		t.Fatalf("delay offset of level 2 = %d, want 9", got)
	}
	slave := startTestBroker(t, func(o *Options) { o.Broker.ID = 1; o.Timers.DelayLevels = sbDelays })
	if err := slave.seams.updateDelayOffsets(tb.seams.delayOffsets()); err != nil {
		t.Fatal(err)
	}
	// The metadata writer saves them a few milliseconds later (persist.go).
	eventually(t, "slave's delayOffset.json", func() bool {
		return cmp.Equal(tb.seams.delayOffsets(), readDelayOffsets(t, slave.Dir))
	})
}

// readDelayOffsets reads the delayOffset.json a broker on dir wrote (empty when it has none).
func readDelayOffsets(t *testing.T, dir string) protocol.DelayOffsetSerializeWrapper {
	t.Helper()
	var w protocol.DelayOffsetSerializeWrapper
	b, err := os.ReadFile(filepath.Join(dir, "config", "delayOffset.json"))
	if err != nil {
		return w
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("delayOffset.json: %v: %s", err, b)
	}
	return w
}
