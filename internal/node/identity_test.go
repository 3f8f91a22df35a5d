package node

import (
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/controller"
)

// A broker in controller mode keeps its id on its store: restarted with the same id, the
// controllers take it back as the same replica, and, its group's only broker, it is elected
// again although the controllers found it dead meanwhile; asked to be another id on
// that store, it refuses to start.
func TestControllerModeBrokerKeepsItsIDAcrossRestarts(t *testing.T) {
	ctl := controllerNode(t)
	dir := t.TempDir()
	o := replicatedOpts(t, ctl, dir)
	o.Broker.ID = 1
	first, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the controller to find the broker dead", func() bool {
		b, ok := controller.Of(ctl.Controller()).BrokerLive("broker-a", 1)
		return ok && time.Now().After(b.LastHeartbeat.Add(b.Timeout))
	})

	again, err := Start(o)
	if err != nil {
		t.Fatalf("restart with its own id: %v", err)
	}
	if id := again.ReplicaID(); id != 1 || !again.Broker().IsMaster() {
		t.Fatalf("restarted as id %d, master %v", id, again.Broker().IsMaster())
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}

	// Without an id of its own, it takes the one its store keeps, not a new one.
	o.Broker.ID = 0
	assigned, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	if id := assigned.ReplicaID(); id != 1 {
		t.Fatalf("restarted without an id as id %d, want the store's 1", id)
	}
	if err := assigned.Close(); err != nil {
		t.Fatal(err)
	}

	o.Broker.ID = 2
	if n, err := Start(o); err == nil {
		n.Close()
		t.Fatal("a store of broker id 1 started as id 2")
	} else if !strings.Contains(err.Error(), "belongs to broker id 1") {
		t.Fatalf("started as another id: %v", err)
	}
}
