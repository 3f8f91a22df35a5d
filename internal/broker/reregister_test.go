package broker

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/remoting"
)

// After a crash (the store's abort marker left behind), member lists are answered SYSTEM_BUSY
// for ReregisterGrace while members register again, and when it ends every member is notified
// so all rebalance with the whole group. A clean start answers at once.
func TestReregisterGraceAfterACrash(t *testing.T) {
	dir := t.TempDir()
	first := startTestBrokerIn(t, dir, nil)
	first.Stop(t)
	storeDir := first.Broker.opts.Store.Dir
	if err := os.WriteFile(filepath.Join(storeDir, "abort"), nil, 0o644); err != nil {
		t.Fatal(err) // the marker a SIGKILLed run leaves behind
	}
	tb := startTestBrokerIn(t, dir, func(o *Options) { o.Broker.ReregisterGrace = 300 * time.Millisecond })
	addTopic(tb, "T", 4)
	a := newTCPClient(t)
	na := recordNotifies(a)
	wiretest.Heartbeat(t, a, tb.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	if code, _ := consumerList(t, a, tb.Addr, "g"); code != remoting.SystemBusy {
		t.Fatalf("member list during the grace: code %d, want SYSTEM_BUSY", code)
	}
	na.waitNotify(t, "g") // A registering
	na.waitNotify(t, "g") // the grace ending
	if code, ids := consumerList(t, a, tb.Addr, "g"); code != remoting.Success || !slices.Equal(ids, []string{"A@1"}) {
		t.Fatalf("member list after the grace: code %d ids %v", code, ids)
	}

	clean := startTestBroker(t, func(o *Options) { o.Broker.ReregisterGrace = time.Hour })
	addTopic(clean, "T", 4)
	wiretest.Heartbeat(t, a, clean.Addr, "A@1", "g", wiretest.Sub("T", "*"))
	if code, ids := consumerList(t, a, clean.Addr, "g"); code != remoting.Success || !slices.Equal(ids, []string{"A@1"}) {
		t.Fatalf("clean start: code %d ids %v, want the list at once", code, ids)
	}
}
