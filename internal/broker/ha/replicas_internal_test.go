package ha

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// failingRestarter is a node whose broker is gone (a restart failed) and whose restarts fail.
type failingRestarter struct{ restarts int }

func (*failingRestarter) Broker() *broker.Broker { return nil }

func (f *failingRestarter) RestartBroker(func(*broker.Options)) error {
	f.restarts++
	return errors.New("the store did not open")
}

// A role change after a failed one finds no broker: the store's history comes from the store on
// disk, and a restart that fails again leaves the manager's state as it was, so that the next
// look at the controllers tries again. It used to read the missing broker's store and crash
// (internal/sim, seed 56), and to take the new state before the restart succeeded.
func TestRoleChangeWithoutBroker(t *testing.T) {
	so := storage.Options{Dir: t.TempDir(), SegmentBytes: 1 << 20}
	s, err := storage.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	for range 3 {
		if _, err := s.PutMessage(&storage.Message{Topic: "T", Body: []byte("x"), StoreHost: host, BornHost: host}); err != nil {
			t.Fatal(err)
		}
	}
	want := s.MaxPhyOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f := &failingRestarter{}
	r := NewReplicas(ReplicasOptions{BrokerName: "b", StoreDir: so.Dir}, nil, "10.0.0.2:10911", f)
	r.storeOpts = so
	if _, end, err := r.localHistory(); err != nil || end != want {
		t.Fatalf("history without a broker: end %d, %v; want %d", end, err, want)
	}
	r.id = 2
	r.state = replicaState{masterID: 1, masterAddr: "10.0.0.1:10911", epoch: 1}
	if err := r.changeRole(t.Context(), replicaState{masterID: 2, masterAddr: "10.0.0.2:10911", epoch: 2}); err == nil {
		t.Fatal("a role change whose restart failed succeeded")
	}
	if f.restarts != 1 || r.state.epoch != 1 || r.state.masterID != 1 {
		t.Fatalf("after a failed role change: %d restarts, state %+v; want one restart and the old state", f.restarts, r.state)
	}
}

// epochCacheTransport answers GET_BROKER_EPOCH_CACHE with a history and a log end.
type epochCacheTransport struct {
	remoting.Transport
	body []byte
}

func (e epochCacheTransport) InvokeSync(_ context.Context, _ string, req *remoting.Command) (*remoting.Command, error) {
	if req.Code != remoting.GetBrokerEpochCache {
		return nil, errors.New("unexpected request")
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = e.body
	return resp, nil
}

// A replica follows a master only once the master's history ends with the epoch the
// controllers named it master of: a master still restarting into its role answers the history
// before, which a replica must not adopt (internal/sim, seed 76).
func TestFollowPointWaitsForTheMastersEpoch(t *testing.T) {
	body := []byte(`{"clusterName":"c","brokerName":"b","brokerId":2,"epochList":[{"epoch":1,"startOffset":0,"endOffset":500}],"maxOffset":500}`)
	r := NewReplicas(ReplicasOptions{BrokerName: "b"}, epochCacheTransport{body: body}, "10.0.0.3:10911", &failingRestarter{})
	local := []storage.EpochEntry{{Epoch: 1, StartOffset: 0}}
	if _, _, _, err := r.followPoint(t.Context(), "10.0.0.2:10911", 2, local, 400); err == nil {
		t.Fatal("followed a master whose history lacks the epoch it was named master of")
	}
	point, cut, remote, err := r.followPoint(t.Context(), "10.0.0.2:10911", 1, local, 400)
	if err != nil || cut || point != 400 || len(remote) != 1 {
		t.Fatalf("followPoint of the same epoch: %d %v %v %v", point, cut, remote, err)
	}
}

// noMasterController is a controller leader that takes the broker's id and registration but
// finds no master to elect; from the second election on it stops answering (a controller cut
// off), so that the deadline ends the join during a request.
type noMasterController struct {
	remoting.Transport
	elections int
}

func (c *noMasterController) InvokeSync(ctx context.Context, _ string, req *remoting.Command) (*remoting.Command, error) {
	switch req.Code {
	case remoting.ControllerGetMetadataInfo:
		resp := remoting.NewResponse(remoting.Success, "")
		resp.ExtFields = remoting.EncodeHeader(&protocol.GetMetaDataResponseHeader{IsLeader: true})
		return resp, nil
	case remoting.ControllerApplyBrokerID, remoting.BrokerHeartbeat:
		return remoting.NewResponse(remoting.Success, ""), nil
	case remoting.ControllerRegisterBroker:
		resp := remoting.NewResponse(remoting.Success, "")
		resp.ExtFields = remoting.EncodeHeader(&protocol.RegisterBrokerToControllerResponseHeader{MasterBrokerID: -1, MasterEpoch: -1})
		return resp, nil
	case remoting.ControllerElectMaster:
		if c.elections++; c.elections == 1 {
			return remoting.NewResponse(remoting.ControllerElectMasterFailed, "no broker of b can be master"), nil
		}
		<-ctx.Done()
		return nil, remoting.ErrTimeout
	}
	return nil, errors.New("unexpected request")
}

// A join that the deadline ends during a request names why the attempts before it failed, not
// the timed-out request: the simulation's seed 453 reported every failed start of a broker as a
// request to a controller that timed out, while the controller had answered each attempt that
// it had no master to elect.
func TestJoinNamesTheLastAnswerNotTheDeadline(t *testing.T) {
	c := &noMasterController{}
	r := NewReplicas(ReplicasOptions{ClusterName: "c", BrokerName: "b", BrokerID: 1, StoreDir: t.TempDir(),
		ControllerAddrs: []string{"10.0.0.9:9876"}}, c, "10.0.0.2:10911", &failingRestarter{})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := r.Join(ctx)
	if err == nil || !strings.Contains(err.Error(), "CONTROLLER_ELECT_MASTER_FAILED") || strings.Contains(err.Error(), "timed out") {
		t.Fatalf("join: %v; want the deadline with the last answer, CONTROLLER_ELECT_MASTER_FAILED", err)
	}
	if c.elections < 2 {
		t.Fatalf("%d elections asked for; want the deadline to end the second", c.elections)
	}
}
