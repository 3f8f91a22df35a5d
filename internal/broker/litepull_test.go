package broker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/remoting"
)

// LITE_PULL_MESSAGE is answered as PULL_MESSAGE is: same header, records and refusals, and
// its header names are checked before the puller runs.
func TestLitePullServedAsPull(t *testing.T) {
	tb := startTestBroker(t, nil)
	addTopic(tb, "T", 2)
	putMsgs(t, tb, "T", 1, 3, "", "m")
	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			group := "lite-" + name
			wiretest.Heartbeat(t, tr, tb.Addr, "c@"+name, group, wiretest.Sub("T", "*"))
			h := pullHeader(group, "T", 1, 0)
			h.SysFlag = 0
			lite := pullCmd(h)
			lite.Code = remoting.LitePullMessage
			r := decodePull(t, invoke(t, tr, tb.Addr, lite))
			if r.code != remoting.Success || r.hdr.NextBeginOffset != 3 {
				t.Fatalf("lite pull: code %d remark %q next %d", r.code, r.remark, r.hdr.NextBeginOffset)
			}
			if diff := cmp.Diff(bodies("m", 0, 3), r.bodies); diff != "" {
				t.Errorf("bodies (-want +got):\n%s", diff)
			}
			// The same refusals as a pull.
			h.Topic = "nope"
			bad := pullCmd(h)
			bad.Code = remoting.LitePullMessage
			if resp := invoke(t, tr, tb.Addr, bad); resp.Code != remoting.TopicNotExist {
				t.Errorf("unknown topic: code %d remark %q", resp.Code, resp.Remark)
			}
			h.Topic = "../etc"
			bad = pullCmd(h)
			bad.Code = remoting.LitePullMessage
			if resp := invoke(t, tr, tb.Addr, bad); resp.Code == remoting.Success {
				t.Errorf("invalid topic name accepted: %q", resp.Remark)
			}
			// A body is refused, as for PULL_MESSAGE.
			h.Topic = "T"
			withBody := pullCmd(h)
			withBody.Code, withBody.Body = remoting.LitePullMessage, []byte("x")
			if resp := invoke(t, tr, tb.Addr, withBody); resp.Code == remoting.Success {
				t.Errorf("lite pull with a body answered SUCCESS")
			}
		})
	}
}
