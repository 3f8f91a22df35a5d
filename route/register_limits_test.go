package route

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// TestRegisterBrokerClampsQueueNums: a registration claiming 2^31-1 queues (or a negative
// count) yields a route whose counts lie in [0, DefaultMaxQueueNums], in both body forms and through
// REGISTER_TOPIC_IN_NAMESRV, so no client allocates more than DefaultMaxQueueNums queues per broker.
func TestRegisterBrokerClampsQueueNums(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			ns, _ := newTestNameServer(t, Options{})
			b := brokerSpec{cluster: "c", name: "broker-h", addr: "10.0.0.8:10911", version: v1, compress: compress,
				topics: []TopicConfig{
					{TopicName: "Huge", ReadQueueNums: math.MaxInt32, WriteQueueNums: math.MaxInt32, Perm: 6},
					{TopicName: "Negative", ReadQueueNums: -1, WriteQueueNums: math.MinInt32, Perm: 6},
					{TopicName: "Drained", ReadQueueNums: 4, WriteQueueNums: 0, Perm: 6},
				}}
			resp := call(t, ns, newFakeChannel("10.0.0.8:1"), b.request())
			if resp.Code != remoting.Success || !strings.Contains(resp.Remark, "2 topic(s) with queue counts clamped") {
				t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
			}
			for topic, want := range map[string][2]int32{"Huge": {DefaultMaxQueueNums, DefaultMaxQueueNums}, "Negative": {0, 0}, "Drained": {4, 0}} {
				body := routeBody(t, ns, topic, remoting.Success)
				r, err := DecodeTopicRouteData([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				if len(body) > 512 || len(r.QueueDatas) != 1 {
					t.Fatalf("route of %s: %d bytes, %d queue datas", topic, len(body), len(r.QueueDatas))
				}
				if got := [2]int32{r.QueueDatas[0].ReadQueueNums, r.QueueDatas[0].WriteQueueNums}; got != want {
					t.Errorf("%s: read/write queues %v, want %v", topic, got, want)
				}
			}
		})
	}
	t.Run("REGISTER_TOPIC_IN_NAMESRV", func(t *testing.T) {
		ns, _ := newTestNameServer(t, Options{})
		register(t, ns, newFakeChannel("10.0.0.1:50001"), brokerA0)
		body := (&TopicRouteData{QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: math.MaxInt32,
			WriteQueueNums: -7, Perm: 6}}}).Encode()
		resp := call(t, ns, newFakeChannel("admin:1"), remoting.NewRequest(remoting.RegisterTopicInNamesrv,
			remoting.EncodeHeader(&protocol.RegisterTopicRequestHeader{Topic: "Made"}), body))
		if resp.Code != remoting.Success {
			t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
		}
		r, ok := ns.TopicRoute("Made")
		if !ok || r.QueueDatas[0].ReadQueueNums != DefaultMaxQueueNums || r.QueueDatas[0].WriteQueueNums != 0 {
			t.Errorf("route %+v", r)
		}
	})
}

// TestRegisterBrokerMaxQueueNumsOption: Options.MaxQueueNums moves the clamp, so a node whose
// brokers allow more queues routes them all.
func TestRegisterBrokerMaxQueueNumsOption(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{MaxQueueNums: 2048})
	b := brokerSpec{cluster: "c", name: "broker-w", addr: "10.0.0.9:10911", version: v1,
		topics: []TopicConfig{
			{TopicName: "Wide", ReadQueueNums: 2000, WriteQueueNums: 2000, Perm: 6},
			{TopicName: "Wider", ReadQueueNums: 4096, WriteQueueNums: 3000, Perm: 6},
		}}
	if resp := call(t, ns, newFakeChannel("10.0.0.9:1"), b.request()); resp.Code != remoting.Success {
		t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
	}
	for topic, want := range map[string]int32{"Wide": 2000, "Wider": 2048} {
		r, ok := ns.TopicRoute(topic)
		if !ok || r.QueueDatas[0].ReadQueueNums != want || r.QueueDatas[0].WriteQueueNums != want {
			t.Errorf("%s: route %+v, want %d queues", topic, r, want)
		}
	}
}

// TestRegisterBrokerBadIdentity: a registration whose broker name, cluster name or address is
// empty, too long, not UTF-8 or holds a control character is refused naming the field, and
// registers nothing; the longest accepted values and a dotted host name register.
func TestRegisterBrokerBadIdentity(t *testing.T) {
	ns, _ := newTestNameServer(t, Options{})
	ok := func() brokerSpec {
		return brokerSpec{cluster: "c", name: "b", addr: "10.0.0.1:10911", version: v1,
			topics: []TopicConfig{topic("T", 1, 6)}}
	}
	cases := []struct {
		name, field string
		edit        func(*protocol.RegisterBrokerRequestHeader)
	}{
		{"empty broker name", "<brokerName>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerName = "" }},
		{"long broker name", "<brokerName>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerName = strings.Repeat("b", 256) }},
		{"huge broker name", "<brokerName>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerName = strings.Repeat("b", 1<<20) }},
		{"broker name not utf8", "<brokerName>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerName = "b\xff" }},
		{"broker name newline", "<brokerName>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerName = "b\nINFO forged" }},
		{"empty cluster", "<clusterName>", func(h *protocol.RegisterBrokerRequestHeader) { h.ClusterName = "" }},
		{"long cluster", "<clusterName>", func(h *protocol.RegisterBrokerRequestHeader) { h.ClusterName = strings.Repeat("c", 256) }},
		{"cluster DEL", "<clusterName>", func(h *protocol.RegisterBrokerRequestHeader) { h.ClusterName = "c\x7f" }},
		{"empty address", "<brokerAddr>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerAddr = "" }},
		{"long address", "<brokerAddr>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerAddr = strings.Repeat("a", 262) }},
		{"address NUL", "<brokerAddr>", func(h *protocol.RegisterBrokerRequestHeader) { h.BrokerAddr = "10.0.0.1:1\x00" }},
		{"long HA address", "<haServerAddr>", func(h *protocol.RegisterBrokerRequestHeader) { h.HAServerAddr = strings.Repeat("a", 262) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := ok().request()
			var h protocol.RegisterBrokerRequestHeader
			if err := h.Decode(req.ExtFields); err != nil {
				t.Fatal(err)
			}
			c.edit(&h)
			req.ExtFields = remoting.EncodeHeader(&h)
			resp := call(t, ns, newFakeChannel("10.0.0.1:1"), req)
			if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, c.field) {
				t.Errorf("code %d remark %.200q, want SYSTEM_ERROR naming %s", resp.Code, resp.Remark, c.field)
			}
			if !utf8.ValidString(resp.Remark) || len(resp.Remark) > 512 {
				t.Errorf("remark of %d bytes: %.200q", len(resp.Remark), resp.Remark)
			}
			if got := ns.table.liveBrokers(); len(got) != 0 {
				t.Errorf("refused registration recorded %v", got)
			}
		})
	}
	edge := ok()
	edge.name, edge.cluster = strings.Repeat("b", maxIdentityBytes), "Cluster.with.dots"
	edge.addr = strings.Repeat("h", maxAddrBytes-len(":10911")) + ":10911"
	if resp := call(t, ns, newFakeChannel("edge:1"), edge.request()); resp.Code != remoting.Success {
		t.Fatalf("longest identity: code %d remark %q", resp.Code, resp.Remark)
	}
	if _, ok := ns.ClusterInfo().BrokerAddrTable[edge.name]; !ok {
		t.Error("the longest broker name was not registered")
	}
}

// TestBrokerTableBounded: the table takes at most maxAddrs broker addresses (existing ones
// still refresh; a freed slot is taken again), a broker name is listed under one cluster
// whatever cluster names it sends, and a broker name holds at most maxTopics topics, freed by
// DELETE_TOPIC_IN_NAMESRV. So GET_BROKER_CLUSTER_INFO and every route stay bounded.
func TestBrokerTableBounded(t *testing.T) {
	nop := zerolog.Nop()
	ns, _ := newTestNameServer(t, Options{Logger: &nop})
	ns.table.maxAddrs, ns.table.maxTopics = 8, 4
	ch := newFakeChannel("hostile:1")
	spec := func(i int) brokerSpec {
		return brokerSpec{cluster: "c", name: fmt.Sprintf("b%d", i), addr: fmt.Sprintf("10.0.1.%d:10911", i),
			version: v1, topics: []TopicConfig{topic("T", 4, 6)}}
	}
	for i := range 8 {
		register(t, ns, ch, spec(i))
	}
	resp := call(t, ns, ch, spec(8).request())
	if resp.Code != remoting.SystemError || !strings.Contains(resp.Remark, "most broker addresses") {
		t.Fatalf("ninth address: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := len(ns.table.liveBrokers()); got != 8 {
		t.Fatalf("%d addresses registered, want 8", got)
	}
	r, _ := ns.TopicRoute("T")
	if len(r.BrokerDatas) != 8 || len(r.QueueDatas) != 8 {
		t.Fatalf("route of T lists %d brokers, %d queue datas; want 8", len(r.BrokerDatas), len(r.QueueDatas))
	}
	if resp := call(t, ns, ch, spec(3).request()); resp.Code != remoting.Success {
		t.Fatalf("refresh of a registered address: code %d remark %q", resp.Code, resp.Remark)
	}
	call(t, ns, ch, BuildUnregisterBroker("c", "b3", spec(3).addr, 0))
	register(t, ns, ch, spec(8))

	// One broker sending a new cluster name each time stays in one cluster.
	for i := range 20 {
		b := spec(0)
		b.cluster = fmt.Sprintf("cluster-%d", i)
		register(t, ns, ch, b)
	}
	ci := ns.ClusterInfo()
	want := map[string][]string{"c": {"b1", "b2", "b4", "b5", "b6", "b7", "b8"}, "cluster-19": {"b0"}}
	if diff := cmp.Diff(want, ci.ClusterAddrTable); diff != "" {
		t.Errorf("clusters (-want +got):\n%s", diff)
	}
	if got := ci.BrokerAddrTable["b0"].Cluster; got != "cluster-19" {
		t.Errorf("b0's cluster %q, want cluster-19", got)
	}

	// New topics under new data versions: a broker name keeps at most maxTopics (b1 has T).
	b := spec(1)
	for v, leftOut := range []int{0, 1, 2} {
		b.version.Counter++
		b.topics = []TopicConfig{topic(fmt.Sprintf("V%dA", v), 1, 6), topic(fmt.Sprintf("V%dB", v), 1, 6)}
		resp := call(t, ns, ch, b.request())
		if resp.Code != remoting.Success {
			t.Fatalf("code %d remark %q", resp.Code, resp.Remark)
		}
		if leftOut > 0 && !strings.Contains(resp.Remark, fmt.Sprintf("%d topic(s) left out", leftOut)) {
			t.Errorf("version %d: remark %q, want %d topic(s) left out", v, resp.Remark, leftOut)
		}
	}
	if got := ns.table.nameTopics["b1"]; got != 4 {
		t.Fatalf("b1 holds %d topics, want 4", got)
	}
	if _, ok := ns.TopicRoute("V2A"); ok {
		t.Error("a topic over the cap has a route")
	}
	// Through REGISTER_TOPIC_IN_NAMESRV too.
	qd := (&TopicRouteData{QueueDatas: []QueueData{{BrokerName: "b1", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}).Encode()
	reg := remoting.NewRequest(remoting.RegisterTopicInNamesrv, remoting.EncodeHeader(&protocol.RegisterTopicRequestHeader{Topic: "Extra"}), qd)
	if resp := call(t, ns, ch, reg); resp.Code != remoting.SystemError {
		t.Errorf("REGISTER_TOPIC_IN_NAMESRV over the cap: code %d remark %q", resp.Code, resp.Remark)
	}
	if _, ok := ns.TopicRoute("Extra"); ok {
		t.Error("a topic over the cap has a route")
	}
	// Deleting a topic frees its slot.
	call(t, ns, ch, BuildDeleteTopic("V0A"))
	reg = remoting.NewRequest(remoting.RegisterTopicInNamesrv, remoting.EncodeHeader(&protocol.RegisterTopicRequestHeader{Topic: "Extra"}), qd)
	if resp := call(t, ns, ch, reg); resp.Code != remoting.Success {
		t.Fatalf("REGISTER_TOPIC_IN_NAMESRV after a delete: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := ns.table.nameTopics["b1"]; got != 4 {
		t.Errorf("b1 holds %d topics, want 4", got)
	}
	// A broker name that leaves gives its count back.
	call(t, ns, ch, BuildUnregisterBroker("c", "b1", spec(1).addr, 0))
	if _, ok := ns.table.nameTopics["b1"]; ok {
		t.Error("a gone broker name kept its topic count")
	}
}

// TestRegisterBodyTopicCap: a body with more than maxRegisterTopics entries is malformed in
// both forms; the compressed form says so from its count, before reading entries.
func TestRegisterBodyTopicCap(t *testing.T) {
	var raw bytes.Buffer
	put := func(s string) {
		raw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(s))))
		raw.WriteString(s)
	}
	put(`{}`)
	raw.Write(binary.BigEndian.AppendUint32(nil, maxRegisterTopics+1))
	put("T 1 1 6 SINGLE_TAG") // one entry: the count alone must refuse it
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	if _, err := DecodeRegisterBrokerBody(z.Bytes(), true); !errors.Is(err, ErrMalformed) ||
		!strings.Contains(err.Error(), "topic count") {
		t.Errorf("compressed count over the cap: %v", err)
	}

	// JSON, read entry by entry: the cap stops it at the first entry past it (a lower cap
	// here, so the test stays fast; the decoder passes maxRegisterTopics).
	body := []byte(`{"a":{},"b":{"topicName":"B","writeQueueNums":2},"c":{},"d":{}}`)
	if _, err := decodeTopicTable(body, 3); err == nil || !strings.Contains(err.Error(), "more than 3 topics") {
		t.Errorf("JSON over the cap: %v", err)
	}
	got, err := decodeTopicTable(body, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]TopicConfig{"a": {TopicName: "a"}, "b": {TopicName: "B", WriteQueueNums: 2},
		"c": {TopicName: "c"}, "d": {TopicName: "d"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON at the cap (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`[]`, `"x"`, `{"a":[]}`, `{"a":{"perm":"6"}}`} {
		if _, err := decodeTopicTable([]byte(bad), 4); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	// A filter server list past maxFilterListBytes is left out, not decoded; a short one is kept.
	for _, c := range []struct {
		list string
		want int
	}{{`["f:1"]`, 1}, {`["` + strings.Repeat("f", maxFilterListBytes) + `"]`, 0}} {
		b, err := DecodeRegisterBrokerBody([]byte(`{"filterServerList":`+c.list+`}`), false)
		if err != nil || len(b.FilterServerList) != c.want {
			t.Errorf("filter list of %d bytes: %v, %d entries, want %d", len(c.list), err, len(b.FilterServerList), c.want)
		}
	}
}
