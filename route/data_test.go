package route

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// goldenRoute is docs/protocol.md §3.1.1's example, compact.
const goldenRoute = `{"orderTopicConf":null,"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSynFlag":0}],"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"}}],"filterServerTable":{}}`

func exampleRoute() *TopicRouteData {
	return &TopicRouteData{
		QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas: []BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}}},
	}
}

func TestTopicRouteDataGolden(t *testing.T) {
	r := exampleRoute()
	if got := string(r.Encode()); got != goldenRoute {
		t.Fatalf("Encode:\n got %s\nwant %s", got, goldenRoute)
	}
	back, err := DecodeTopicRouteData([]byte(goldenRoute))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
}

func TestTopicRouteDataEncodeEdges(t *testing.T) {
	cases := []struct {
		name string
		r    *TopicRouteData
		want string
	}{
		{"empty", &TopicRouteData{},
			`{"orderTopicConf":null,"queueDatas":[],"brokerDatas":[],"filterServerTable":{}}`},
		{"no addresses, ids sorted numerically, order conf, filter servers", &TopicRouteData{
			OrderTopicConf: "b:2;c:1",
			BrokerDatas: []BrokerData{
				{Cluster: "c", BrokerName: "b"},
				{Cluster: "c", BrokerName: "c", BrokerAddrs: map[int64]string{10: "[::1]:3", 2: "x:2", 0: "x:1"}},
			},
			FilterServerTable: map[string][]string{"x:1": {"f:1"}},
		}, `{"orderTopicConf":"b:2;c:1","queueDatas":[],"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{}},` +
			`{"cluster":"c","brokerName":"c","brokerAddrs":{"0":"x:1","2":"x:2","10":"[::1]:3"}}],"filterServerTable":{"x:1":["f:1"]}}`},
		{"escaping", &TopicRouteData{QueueDatas: []QueueData{{BrokerName: "a\"b\\c\x01\xff", Perm: 7, TopicSynFlag: 3}}},
			`{"orderTopicConf":null,"queueDatas":[{"brokerName":"a\"b\\c\u0001\ufffd","readQueueNums":0,"writeQueueNums":0,"perm":7,"topicSynFlag":3}],"brokerDatas":[],"filterServerTable":{}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(c.r.Encode()); got != c.want {
				t.Errorf("Encode:\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestDecodeApacheRoute feeds bodies in the form Apache RocketMQ name servers send (fastjson:
// keys sorted, bare integer keys, 5.x's topicSysFlag).
func TestDecodeApacheRoute(t *testing.T) {
	want := &TopicRouteData{
		QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6, TopicSynFlag: 2}},
		BrokerDatas: []BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}}},
	}
	cases := []struct{ name, body string }{
		{"fastjson 4.x", `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSynFlag":2,"writeQueueNums":4}]}`},
		{"fastjson 5.x", `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":2,"writeQueueNums":4}]}`},
		{"quoted keys, whitespace", "{ \"queueDatas\" : [ {\"BROKERNAME\":\"broker-a\",\"readQueueNums\":8,\"writeQueueNums\":4,\"perm\":6,\"topicSynFlag\":2} ],\n \"brokerDatas\":[{\"cluster\":\"DefaultCluster\",\"brokerName\":\"broker-a\",\"brokerAddrs\":{ \"0\" : \"10.0.0.5:10911\" , 1 : \"10.0.0.6:10911\"}}], \"orderTopicConf\": null}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeTopicRouteData([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeTopicRouteDataErrors(t *testing.T) {
	for _, body := range []string{``, `{`, `[]`, `{"queueDatas":[{"perm":"6"}]}`,
		`{"brokerDatas":[{"brokerAddrs":{"x":"a:1"}}]}`, `{"brokerDatas":[{"brokerAddrs":{1.5:"a:1"}}]}`,
		`{"brokerDatas":[{"brokerAddrs":[1]}]}`} {
		if _, err := DecodeTopicRouteData([]byte(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeTopicRouteData(%s) = %v, want ErrMalformed", body, err)
		}
	}
	// Missing parts decode as empty; a strange filter server table is ignored.
	got, err := DecodeTopicRouteData([]byte(`{"brokerDatas":[{"brokerName":"b"}],"filterServerTable":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &TopicRouteData{QueueDatas: []QueueData{}, BrokerDatas: []BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
}

func TestQuoteNumericKeys(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{0:"a:1",1:"b:2"}`, `{"0":"a:1","1":"b:2"}`},
		{`{"0":"a"}`, `{"0":"a"}`},
		{`[0,1,{2:3}]`, `[0,1,{"2":3}]`},
		{`{"k":[1,2],"m":{ -3 :4}}`, `{"k":[1,2],"m":{ "-3" :4}}`},
		{`{"s":"{0:\"x\",1:2}"}`, `{"s":"{0:\"x\",1:2}"}`},
		{`{"s":"\\",5:6}`, `{"s":"\\","5":6}`},
		{`{1`, `{"1"`},
		{`]]}}{"`, `]]}}{"`},
	}
	for _, c := range cases {
		if got := string(quoteNumericKeys([]byte(c.in))); got != c.want {
			t.Errorf("quoteNumericKeys(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestClusterInfoRoundTrip(t *testing.T) {
	ci := &ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"broker-b": {Cluster: "c2", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "b:1"}},
			"broker-a": {Cluster: "c1", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "a:1", 1: "a:2"}},
		},
		ClusterAddrTable: map[string][]string{"c2": {"broker-b"}, "c1": {"broker-a"}},
	}
	want := `{"brokerAddrTable":{"broker-a":{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"0":"a:1","1":"a:2"}},` +
		`"broker-b":{"cluster":"c2","brokerName":"broker-b","brokerAddrs":{"0":"b:1"}}},"clusterAddrTable":{"c1":["broker-a"],"c2":["broker-b"]}}`
	if got := string(ci.Encode()); got != want {
		t.Fatalf("Encode:\n got %s\nwant %s", got, want)
	}
	back, err := DecodeClusterInfo([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ci, back); diff != "" {
		t.Errorf("decode (-want +got):\n%s", diff)
	}
	// Apache's form: bare keys, keys sorted.
	apache := `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"a:1",1:"a:2"},"brokerName":"broker-a","cluster":"c1"},` +
		`"broker-b":{"brokerAddrs":{0:"b:1"},"brokerName":"broker-b","cluster":"c2"}},"clusterAddrTable":{"c1":["broker-a"],"c2":["broker-b"]}}`
	back, err = DecodeClusterInfo([]byte(apache))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ci, back); diff != "" {
		t.Errorf("decode apache (-want +got):\n%s", diff)
	}
}

func TestSmallBodies(t *testing.T) {
	tl := &TopicList{TopicList: []string{"A", "B"}}
	if got, want := string(tl.Encode()), `{"topicList":["A","B"]}`; got != want {
		t.Errorf("TopicList = %s, want %s", got, want)
	}
	if got, want := string((&TopicList{}).Encode()), `{"topicList":[]}`; got != want {
		t.Errorf("empty TopicList = %s, want %s", got, want)
	}
	back, err := DecodeTopicList([]byte(`{"topicList":["A","B"],"brokerAddr":"x:1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&TopicList{TopicList: []string{"A", "B"}, BrokerAddr: "x:1"}, back); diff != "" {
		t.Errorf("TopicList decode (-want +got):\n%s", diff)
	}
	kv := &KVTable{Table: map[string]string{"b": "2", "a": "1"}}
	if got, want := string(kv.Encode()), `{"table":{"a":"1","b":"2"}}`; got != want {
		t.Errorf("KVTable = %s, want %s", got, want)
	}
	kvBack, err := DecodeKVTable(kv.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(kv, kvBack); diff != "" {
		t.Errorf("KVTable decode (-want +got):\n%s", diff)
	}
	if _, err := DecodeKVTable([]byte(`{"table":[]}`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("DecodeKVTable(bad) = %v", err)
	}
}

func TestBrokerDataSelect(t *testing.T) {
	bd := BrokerData{BrokerAddrs: map[int64]string{2: "s2", 1: "s1"}}
	if got := bd.MasterAddr(); got != "" {
		t.Errorf("MasterAddr = %q", got)
	}
	if got := bd.SelectAddr(); got != "s1" {
		t.Errorf("SelectAddr = %q, want s1", got)
	}
	bd.BrokerAddrs[0] = "m"
	if got := bd.SelectAddr(); got != "m" {
		t.Errorf("SelectAddr = %q, want m", got)
	}
	if got := (&BrokerData{}).SelectAddr(); got != "" {
		t.Errorf("SelectAddr(empty) = %q", got)
	}
}

func TestPerm(t *testing.T) {
	cases := map[int32]string{6: "RW-", 7: "RWX", 4: "R--", 2: "-W-", 0: "---", 8: "---"}
	for perm, want := range cases {
		if got := PermString(perm); got != want {
			t.Errorf("PermString(%d) = %s, want %s", perm, got, want)
		}
	}
	if !IsReadable(PermReadWrite) || !IsWritable(PermReadWrite) || IsInherited(PermReadWrite) {
		t.Error("PermReadWrite bits")
	}
}

func TestValidOrderTopicConf(t *testing.T) {
	for s, want := range map[string]bool{"a:1": true, "a:1;b:2": true, "": false, "a": false,
		"a:1;": false, ":1": false, "a:x": false, "a:-1": false, "a\"b:1": false} {
		if got := validOrderTopicConf(s); got != want {
			t.Errorf("validOrderTopicConf(%q) = %v, want %v", s, got, want)
		}
	}
}

// goClientBrokerAddrs parses a brokerAddrs object the way the official Go client does
// (docs/protocol.md §3.1.2): strip the first and last character, split on ",", id before the first
// ":" with quotes removed, address after it with quotes removed.
func goClientBrokerAddrs(raw string) map[int64]string {
	out := map[int64]string{}
	inner := raw[1 : len(raw)-1]
	if inner == "" {
		return out
	}
	for _, piece := range strings.Split(inner, ",") {
		i := strings.Index(piece, ":")
		id, _ := strconv.ParseInt(strings.ReplaceAll(piece[:i], `"`, ""), 10, 64)
		out[id] = strings.ReplaceAll(piece[i+1:], `"`, "")
	}
	return out
}

// TestGoClientParsesBrokerAddrs checks every brokerAddrs object we emit survives the Go client's
// hand parser.
func TestGoClientParsesBrokerAddrs(t *testing.T) {
	r := &TopicRouteData{BrokerDatas: []BrokerData{
		{Cluster: "c", BrokerName: "a", BrokerAddrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911", 12: "h:1"}},
		{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{3: "[::1]:10911"}},
		{Cluster: "c", BrokerName: "e"},
	}}
	body := string(r.Encode())
	for i, part := range strings.Split(body, `"brokerAddrs":`)[1:] {
		raw := part[:strings.Index(part, "}")+1]
		want := r.BrokerDatas[i].BrokerAddrs
		if want == nil {
			want = map[int64]string{}
		}
		if diff := cmp.Diff(want, goClientBrokerAddrs(raw)); diff != "" {
			t.Errorf("broker %d: Go client reads %s as (-want +got):\n%s", i, raw, diff)
		}
	}
}
