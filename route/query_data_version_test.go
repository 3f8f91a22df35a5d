package route

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// queryDataVersion builds QUERY_DATA_VERSION for b carrying version, as a broker's
// needRegister sends it.
func queryDataVersion(t *testing.T, b brokerSpec, version DataVersion) *remoting.Command {
	t.Helper()
	body, err := json.Marshal(version)
	if err != nil {
		t.Fatal(err)
	}
	return remoting.NewRequest(remoting.QueryDataVersion, remoting.EncodeHeader(&protocol.QueryDataVersionRequestHeader{
		BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster, BrokerID: b.id}), body)
}

// QUERY_DATA_VERSION is answered as RocketMQ's queryBrokerTopicConfig answers it: SUCCESS, the
// header's changed saying whether the broker is unknown or last registered another version,
// the body the version the name server holds (none for an unknown broker, so that one that
// restarted gets a whole registration), and only an unchanged query refreshing liveness.
func TestQueryDataVersionAnswers(t *testing.T) {
	cases := []struct {
		name        string
		registered  bool
		query       DataVersion
		wantChanged string
		wantBody    string
	}{
		{"unknown broker", false, v1, "true", ""},
		{"same version", true, v1, "false", `{"timestamp":1700000000000,"counter":1}`},
		{"other version", true, v2, "true", `{"timestamp":1700000000000,"counter":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns, clk := newTestNameServer(t, Options{})
			ch := newFakeChannel("10.0.0.3:50003")
			if c.registered {
				register(t, ns, ch, brokerB0) // v1
			}
			clk.Advance(100 * time.Second)
			resp := call(t, ns, ch, queryDataVersion(t, brokerB0, c.query))
			if resp.Code != remoting.Success || resp.Ext("changed") != c.wantChanged || string(resp.Body) != c.wantBody {
				t.Fatalf("answer %d changed=%q body %q, want 0 changed=%q body %q",
					resp.Code, resp.Ext("changed"), resp.Body, c.wantChanged, c.wantBody)
			}
			clk.Advance(30 * time.Second) // 130 s after the registration, 30 s after the query
			expired := ns.scanNotActiveBrokers()
			wantExpired := 0
			if c.registered && c.wantChanged == "true" {
				wantExpired = 1 // a changed answer is no heartbeat
			}
			if expired != wantExpired {
				t.Errorf("expired %d brokers, want %d", expired, wantExpired)
			}
			if !c.registered && len(ns.table.liveBrokers()) != 0 {
				t.Error("a query registered an unknown broker")
			}
		})
	}
}
