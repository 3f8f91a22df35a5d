package route

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

func permReq(code int32, broker string) *remoting.Command {
	return remoting.NewRequest(code, remoting.EncodeHeader(&protocol.WipeWritePermOfBrokerRequestHeader{BrokerName: broker}), nil)
}

func queuePerm(t *testing.T, ns *NameServer, topicName, broker string) int32 {
	t.Helper()
	r, ok := ns.TopicRoute(topicName)
	if !ok {
		t.Fatalf("no route for %s", topicName)
	}
	for _, qd := range r.QueueDatas {
		if qd.BrokerName == broker {
			return qd.Perm
		}
	}
	t.Fatalf("no queue data of %s in %s", broker, topicName)
	return 0
}

// TestWipeAndAddWritePerm: the wipe takes the write bit off every topic of one broker name,
// and only of that one; a periodic registration with the same data version keeps the wipe; the
// add restores read-write, as RocketMQ's operateWritePermOfBroker.
func TestWipeAndAddWritePerm(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{})
	a := brokerSpec{cluster: "c", name: "a", addr: "10.0.0.1:10911",
		topics:  []TopicConfig{topic("T1", 4, PermReadWrite), topic("T2", 4, PermReadWrite|PermInherit)},
		version: DataVersion{Timestamp: 1, Counter: 1}}
	b := brokerSpec{cluster: "c", name: "b", addr: "10.0.0.2:10911",
		topics: []TopicConfig{topic("T1", 4, PermReadWrite)}, version: DataVersion{Timestamp: 1, Counter: 1}}
	chA := newFakeChannel("10.0.0.1:50000")
	register(t, ns, chA, a)
	register(t, ns, newFakeChannel("10.0.0.2:50000"), b)

	resp := call(t, ns, newFakeChannel("admin:1"), permReq(remoting.WipeWritePermOfBroker, "a"))
	if resp.Code != remoting.Success {
		t.Fatalf("wipe: %d %s", resp.Code, resp.Remark)
	}
	if got := resp.ExtFields["wipeTopicCount"]; got != "2" {
		t.Fatalf("wipeTopicCount = %q, want 2", got)
	}
	if p := queuePerm(t, ns, "T1", "a"); p != PermRead {
		t.Errorf("T1 on a: perm %d, want %d", p, PermRead)
	}
	if p := queuePerm(t, ns, "T2", "a"); p != PermRead|PermInherit {
		t.Errorf("T2 on a: perm %d, want %d", p, PermRead|PermInherit)
	}
	if p := queuePerm(t, ns, "T1", "b"); p != PermReadWrite {
		t.Errorf("T1 on b changed: perm %d", p)
	}
	register(t, ns, chA, a) // the periodic registration: same data version
	if p := queuePerm(t, ns, "T1", "a"); p != PermRead {
		t.Errorf("after a re-registration T1 on a: perm %d, want the wipe kept", p)
	}

	resp = call(t, ns, newFakeChannel("admin:1"), permReq(remoting.AddWritePermOfBroker, "a"))
	if resp.Code != remoting.Success || resp.ExtFields["addTopicCount"] != "2" {
		t.Fatalf("add: %d %s %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	if p := queuePerm(t, ns, "T2", "a"); p != PermReadWrite {
		t.Errorf("T2 on a after add: perm %d, want %d (RocketMQ sets read-write)", p, PermReadWrite)
	}

	resp = call(t, ns, newFakeChannel("admin:1"), permReq(remoting.WipeWritePermOfBroker, "nobody"))
	if resp.Code != remoting.Success || resp.ExtFields["wipeTopicCount"] != "0" {
		t.Fatalf("unknown broker: %d %s %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	resp = call(t, ns, newFakeChannel("admin:1"), remoting.NewRequest(remoting.WipeWritePermOfBroker, nil, nil))
	if resp.Code == remoting.Success {
		t.Fatal("a wipe without brokerName succeeded")
	}
	resp = call(t, ns, newFakeChannel("admin:1"), permReq(remoting.WipeWritePermOfBroker, strings.Repeat("x", 10000)))
	if resp.Code == remoting.Success {
		t.Fatal("a wipe with a 10,000-byte broker name succeeded")
	}
}

func TestSystemAndUnitTopicLists(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{})
	unit := topic("U", 2, PermReadWrite)
	unit.TopicSysFlag = topicSysFlagUnit
	register(t, ns, newFakeChannel("10.0.0.1:50000"), brokerSpec{cluster: "c1", name: "a", addr: "10.0.0.1:10911",
		topics: []TopicConfig{topic("T", 2, PermReadWrite), unit}, version: DataVersion{Timestamp: 1}})
	resp := call(t, ns, newFakeChannel("admin:1"), remoting.NewRequest(remoting.GetSystemTopicListFromNS, nil, nil))
	if want := `{"topicList":["a","c1"],"brokerAddr":"10.0.0.1:10911"}`; string(resp.Body) != want {
		t.Errorf("system topics %s, want %s", resp.Body, want)
	}
	resp = call(t, ns, newFakeChannel("admin:1"), remoting.NewRequest(remoting.GetUnitTopicList, nil, nil))
	if want := `{"topicList":["U"]}`; string(resp.Body) != want {
		t.Errorf("unit topics %s, want %s", resp.Body, want)
	}
}

// TestNamesrvConfig: GET_NAMESRV_CONFIG is properties text; UPDATE_NAMESRV_CONFIG changes
// orderMessageEnable (routes lose their order configuration) and refuses every other key,
// changing nothing.
func TestNamesrvConfig(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{KVConfigPath: filepath.Join(t.TempDir(), "kv.json")})
	get := func() map[string]string {
		resp := call(t, ns, newFakeChannel("admin:1"), remoting.NewRequest(remoting.GetNamesrvConfig, nil, nil))
		kv, err := ParseProperties(string(resp.Body))
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("get config: %d %v %q", resp.Code, err, resp.Body)
		}
		return kv
	}
	kv := get()
	if !strings.HasSuffix(kv["kvConfigPath"], "kv.json") || kv["scanNotActiveBrokerInterval"] != "10000" || kv["orderMessageEnable"] != "true" {
		t.Fatalf("config %v", kv)
	}
	register(t, ns, newFakeChannel("10.0.0.1:50000"), brokerSpec{cluster: "c", name: "a", addr: "10.0.0.1:10911",
		topics: []TopicConfig{topic("T", 2, PermReadWrite)}, version: DataVersion{Timestamp: 1}})
	ns.kv.put(NamespaceOrderTopicConfig, "T", "a:2")
	update := func(body string) *remoting.Command {
		return call(t, ns, newFakeChannel("admin:1"), remoting.NewRequest(remoting.UpdateNamesrvConfig, nil, []byte(body)))
	}
	resp := update("orderMessageEnable=false\nscanNotActiveBrokerInterval=5\n")
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, "scanNotActiveBrokerInterval") {
		t.Fatalf("update with a fixed key: %d %q", resp.Code, resp.Remark)
	}
	if get()["orderMessageEnable"] != "true" {
		t.Fatal("a refused update changed orderMessageEnable")
	}
	if resp := update("orderMessageEnable=maybe"); resp.Code == remoting.Success {
		t.Fatal("orderMessageEnable=maybe accepted")
	}
	if resp := update("# comment\norderMessageEnable = false\n"); resp.Code != remoting.Success {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	if r, _ := ns.TopicRoute("T"); r.OrderTopicConf != "" {
		t.Errorf("orderMessageEnable=false, route still has %q", r.OrderTopicConf)
	}
	if resp := update("orderMessageEnable=true"); resp.Code != remoting.Success {
		t.Fatal(resp.Remark)
	}
	if r, _ := ns.TopicRoute("T"); r.OrderTopicConf != "a:2" {
		t.Errorf("orderMessageEnable=true, route order conf %q", r.OrderTopicConf)
	}
	if resp := update(strings.Repeat("k=v\n", 20000)); resp.Code == remoting.Success {
		t.Fatal("an 80 KB body accepted")
	}
}
