package dashboard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/dashboard"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// env is a node with its dashboard, reached over HTTP and the node's TCP listener.
type env struct {
	node *mq.Node
	url  string
	adm  *admin.Admin
	prod *producer.Producer
}

func start(t *testing.T) *env {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", Logger: &l, Store: config.Store{Dir: t.TempDir(), SegmentBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	a, err := admin.New(admin.Options{NameServers: []string{n.Addr()}, Logger: &l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewServer(serve(t, a, dashboard.Options{Logger: &l, Refresh: 20 * time.Millisecond}))
	t.Cleanup(srv.Close)
	p, err := producer.New(producer.WithNameServers(n.Addr()), producer.WithLogger(&l))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &env{node: n, url: srv.URL, adm: a, prod: p}
}

// serve is a dashboard over a, closed at the test's end.
func serve(t *testing.T, a *admin.Admin, opts dashboard.Options) *dashboard.Server {
	d := dashboard.New(a, opts)
	t.Cleanup(func() { d.Close() })
	return d
}

func (e *env) createTopic(t *testing.T, topic string, queues int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.adm.CreateTopicInCluster(ctx, mq.DefaultClusterName,
		admin.TopicConfig{Topic: topic, ReadQueueNums: queues, WriteQueueNums: queues}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) send(t *testing.T, msgs ...*producer.Message) []*producer.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*producer.SendResult
	for _, m := range msgs {
		res, err := e.prod.SendSync(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
	}
	return out
}

// token is what the page sends back on writes, from GET /api/token.
func (e *env) token(t *testing.T) string {
	t.Helper()
	var a struct{ Token, Header string }
	if st := e.get(t, "/api/token", &a); st != http.StatusOK || len(a.Token) != 64 || a.Header != dashboard.TokenHeader {
		t.Fatalf("GET /api/token: %d %+v", st, a)
	}
	return a.Token
}

// post sends body as JSON to path with token in the token header (none when empty).
func (e *env) post(t *testing.T, path, body, token string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set(dashboard.TokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// get decodes the JSON answer of path into v, and returns the status.
func (e *env) get(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := http.Get(e.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// eventually polls check until it returns "", failing with its last answer after 20 s.
func eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type topicsAnswer struct {
	Topics []struct {
		Topic                   string
		System                  bool
		ReadQueues, WriteQueues int
		Messages, LastPut       int64
		Error                   string
	}
	Hidden int
}

type groupsAnswer struct {
	Groups []struct {
		Group   string
		Online  bool
		Members []struct{ ClientID, ClientAddr string }
		Lag     int64
		Queues  []struct {
			Topic                        string
			QueueID                      int
			BrokerOffset, ConsumerOffset int64
			Lag                          int64
		}
		Error string
	}
}

type errorAnswer struct{ Error string }

func TestPageServed(t *testing.T) {
	e := start(t)
	for path, want := range map[string]string{"/": `id="msg-result"`, "/app.js": "/api/overview", "/style.css": ".topbar"} {
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(want)) {
			t.Errorf("GET %s: %d, %d bytes without %q", path, resp.StatusCode, len(body), want)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: headers %v", path, resp.Header)
		}
	}
	resp, err := http.Post(e.url+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /: %d", resp.StatusCode)
	}
}

// The overview lists the node's broker, and its put rate rises above 0 while messages flow.
func TestOverview(t *testing.T) {
	e := start(t)
	e.createTopic(t, "DashOverview", 2)
	eventually(t, "put throughput in the history", func() string {
		e.send(t, producer.NewMessage("DashOverview", []byte("x")))
		var o struct {
			Clusters map[string][]string
			Brokers  []struct {
				Cluster, BrokerName, Role, Addr string
				BrokerID                        int64
				PutTps                          *float64
				PutTotal                        *int64
			}
			History []struct{ T, Put, Get float64 }
		}
		if st := e.get(t, "/api/overview", &o); st != http.StatusOK {
			return fmt.Sprint("status ", st)
		}
		if len(o.Brokers) != 1 || len(o.Clusters[mq.DefaultClusterName]) != 1 {
			return fmt.Sprintf("brokers %+v clusters %v", o.Brokers, o.Clusters)
		}
		b := o.Brokers[0]
		if b.Role != "MASTER" || b.BrokerID != 0 || b.Addr != e.node.BrokerAddr() || b.BrokerName != mq.DefaultBrokerName || b.PutTotal == nil {
			t.Fatalf("broker %+v", b)
		}
		for _, p := range o.History {
			if p.Put > 0 {
				return ""
			}
		}
		return fmt.Sprintf("history %v", o.History)
	})
}

// A created topic is listed with its queues and messages; system topics only when asked.
func TestTopics(t *testing.T) {
	e := start(t)
	e.createTopic(t, "DashTopics", 3)
	before := time.Now().Add(-time.Second).UnixMilli()
	for i := range 5 {
		e.send(t, producer.NewMessage("DashTopics", fmt.Appendf(nil, "m%d", i)))
	}
	eventually(t, "topic with 5 messages", func() string {
		var a topicsAnswer
		e.get(t, "/api/topics", &a)
		for _, tp := range a.Topics {
			if tp.System {
				t.Fatalf("system topic %s listed without system=1", tp.Topic)
			}
			if tp.Topic == "DashTopics" {
				if tp.Messages != 5 || tp.WriteQueues != 3 || tp.ReadQueues != 3 || tp.LastPut < before {
					return fmt.Sprintf("row %+v", tp)
				}
				if a.Hidden == 0 {
					return "no system topic hidden"
				}
				return ""
			}
		}
		return fmt.Sprintf("not listed: %+v", a.Topics)
	})
	var all topicsAnswer
	e.get(t, "/api/topics?system=1", &all)
	system := map[string]bool{}
	for _, tp := range all.Topics {
		system[tp.Topic] = tp.System
	}
	for _, name := range []string{"TBW102", mq.DefaultClusterName, mq.DefaultBrokerName} {
		if !system[name] {
			t.Errorf("%s not listed as a system topic: %v", name, system)
		}
	}
	if s, ok := system["DashTopics"]; !ok || s {
		t.Errorf("DashTopics with system=1: listed %v, system %v", ok, s)
	}
}

// startConsumer consumes topic in group over TCP until the test ends or stop is called.
func (e *env) startConsumer(t *testing.T, group, topic string) (got chan string, stop func()) {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(e.node.Addr()), consumer.WithGroup(group),
		consumer.WithLogger(&l), consumer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_")),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
		consumer.WithRebalanceInterval(50*time.Millisecond), consumer.WithPersistInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got = make(chan string, 1024)
	if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			got <- string(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return got, func() { c.Close() }
}

// group is the row of group name in /api/groups; Queues counts its queues of topic (the stats
// also hold the group's retry queue).
func (e *env) group(t *testing.T, name, topic string) (row struct {
	Online, Found   bool
	Members, Queues int
	Lag, QueueLag   int64
	Error           string
}) {
	var a groupsAnswer
	if st := e.get(t, "/api/groups", &a); st != http.StatusOK {
		t.Fatalf("groups: %d", st)
	}
	for _, g := range a.Groups {
		if g.Group == name {
			row.Found, row.Online, row.Members, row.Lag, row.Error = true, g.Online, len(g.Members), g.Lag, g.Error
			for _, q := range g.Queues {
				if q.Topic == topic {
					row.Queues++
				}
				if q.Lag != q.BrokerOffset-q.ConsumerOffset {
					t.Fatalf("queue %+v", q)
				}
				row.QueueLag += q.Lag
			}
		}
	}
	return row
}

// A group's lag rises while nobody consumes, is reset back by time through the API, and falls
// to 0 when its consumer runs; its members are listed while online.
func TestGroupsLagAndReset(t *testing.T) {
	e := start(t)
	const topic, group = "DashLag", "dash-lag-cg"
	e.createTopic(t, topic, 2)
	e.send(t, producer.NewMessage(topic, []byte("first")))
	got, stop := e.startConsumer(t, group, topic)
	<-got
	eventually(t, "online group with its offsets committed", func() string {
		r := e.group(t, group, topic)
		if !r.Found || !r.Online || r.Members != 1 || r.Lag != 0 || r.Queues != 2 {
			return fmt.Sprintf("%+v", r)
		}
		return ""
	})
	stop()
	e.send(t, producer.NewMessage(topic, []byte("a")), producer.NewMessage(topic, []byte("b")),
		producer.NewMessage(topic, []byte("c")))
	eventually(t, "offline group with lag 3", func() string {
		r := e.group(t, group, topic)
		if r.Online || r.Members != 0 || r.Lag != 3 || r.QueueLag != 3 || r.Error != "" {
			return fmt.Sprintf("%+v", r)
		}
		return ""
	})

	body := fmt.Sprintf(`{"group":%q,"topic":%q,"timestamp":0,"force":true}`, group, topic)
	resp := e.post(t, "/api/reset", body, e.token(t))
	var reset struct {
		Offsets []struct {
			Topic   string
			QueueID int
			Offset  int64
		}
	}
	err := json.NewDecoder(resp.Body).Decode(&reset)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(reset.Offsets) != 2 {
		t.Fatalf("reset: %d %+v %v", resp.StatusCode, reset, err)
	}
	for _, o := range reset.Offsets {
		if o.Topic != topic || o.Offset != 0 {
			t.Fatalf("reset to %+v, want offset 0", o)
		}
	}
	if r := e.group(t, group, topic); r.Lag != 4 {
		t.Fatalf("lag after the reset to 0: %+v", r)
	}

	got, _ = e.startConsumer(t, group, topic)
	for range 4 {
		<-got
	}
	eventually(t, "lag 0 after consuming", func() string {
		if r := e.group(t, group, topic); r.Lag != 0 || !r.Online {
			return fmt.Sprintf("%+v", r)
		}
		return ""
	})
}

// Messages are found by key and by either kind of id, with their body and properties.
func TestMessageLookup(t *testing.T) {
	e := start(t)
	const topic = "DashLookup"
	e.createTopic(t, topic, 2)
	binary := []byte{0xff, 0xfe, 0, 1}
	res := e.send(t, producer.NewMessage(topic, []byte("hello dashboard")).WithKeys("order-42").WithTags("tagA"),
		producer.NewMessage(topic, binary).WithKeys("bin-1"))

	type answer struct {
		Messages []struct {
			MsgID, OffsetMsgID, Topic, Tags, Body, BodyEncoding string
			Keys                                                []string
			Properties                                          map[string]string
			QueueOffset, StoreTime                              int64
		}
	}
	eventually(t, "message by key", func() string {
		var a answer
		if st := e.get(t, "/api/message?"+url.Values{"topic": {topic}, "key": {"order-42"}}.Encode(), &a); st != http.StatusOK {
			return fmt.Sprint("status ", st) // the key index is written just after the append
		}
		m := a.Messages[0]
		if len(a.Messages) != 1 || m.Body != "hello dashboard" || m.BodyEncoding != "text" || m.Tags != "tagA" ||
			m.Keys[0] != "order-42" || m.MsgID != res[0].MsgID || m.Properties["KEYS"] != "order-42" || m.StoreTime == 0 {
			t.Fatalf("by key: %+v", a)
		}
		return ""
	})
	var byOffset, byUnique answer
	if st := e.get(t, "/api/message?id="+res[1].OffsetMsgID, &byOffset); st != http.StatusOK || len(byOffset.Messages) != 1 {
		t.Fatalf("by offset id: %d %+v", st, byOffset)
	}
	if m := byOffset.Messages[0]; m.BodyEncoding != "base64" || m.Body != base64.StdEncoding.EncodeToString(binary) {
		t.Fatalf("binary body: %+v", m)
	}
	if st := e.get(t, "/api/message?"+url.Values{"topic": {topic}, "id": {res[0].MsgID}}.Encode(), &byUnique); st != http.StatusOK ||
		byUnique.Messages[0].Body != "hello dashboard" {
		t.Fatalf("by unique key: %d %+v", st, byUnique)
	}
	var e404 errorAnswer
	if st := e.get(t, "/api/message?id="+res[0].MsgID, &e404); st != http.StatusNotFound || !strings.Contains(e404.Error, "topic") {
		t.Fatalf("a unique key without its topic: %d %+v", st, e404)
	}
}

// Names, ids and bodies from requests are checked before any is sent to the cluster.
func TestHostileRequests(t *testing.T) {
	e := start(t)
	token := e.token(t)
	long := strings.Repeat("a", 300)
	for _, c := range []struct {
		method, path, contentType, origin, body string
		status                                  int
	}{
		{"GET", "/api/message", "", "", "", 400},
		{"GET", "/api/message?id=zz", "", "", "", 400},
		{"GET", "/api/message?id=" + strings.Repeat("0", 65), "", "", "", 400},
		{"GET", "/api/message?key=k", "", "", "", 400},
		{"GET", "/api/message?topic=a/b&key=k", "", "", "", 400},
		{"GET", "/api/message?topic=" + long + "&key=k", "", "", "", 400},
		{"GET", "/api/message?topic=T&key=" + strings.Repeat("k", 1025), "", "", "", 400},
		{"GET", "/api/message?id=7F0000010000000100000000000000AA", "", "", "", 404}, // a host not of the cluster
		{"GET", "/api/nope", "", "", "", 404},
		{"GET", "/api/reset", "", "", "", 404},
		{"POST", "/api/reset", "application/json", "", `{"group":"g","topic":"t"}`, 403}, // no token (set below for the others)
		{"POST", "/api/reset", "text/plain", "", `{}`, 415},
		{"POST", "/api/reset", "application/json", "", `{`, 400},
		{"POST", "/api/reset", "application/json", "", `{"group":"g","topic":"t","bogus":1}`, 400},
		{"POST", "/api/reset", "application/json", "", `{"group":"g","topic":"t","timestamp":0,"x":"` + strings.Repeat("x", 5000) + `"}`, 400},
		{"POST", "/api/reset", "application/json", "", `{"group":"` + long + `","topic":"t"}`, 400},
		{"POST", "/api/reset", "application/json", "", `{"group":"g","topic":"t t"}`, 400},
		{"POST", "/api/reset", "application/json", "", `{"group":"g","topic":"t","timestamp":-1}`, 400},
		{"POST", "/api/reset", "application/json", "http://evil.example", `{"group":"g","topic":"t"}`, 403},
	} {
		req, err := http.NewRequest(c.method, e.url+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.method == "POST" && c.status != 403 {
			req.Header.Set(dashboard.TokenHeader, token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var a errorAnswer
		err = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		if resp.StatusCode != c.status || err != nil || a.Error == "" || len(a.Error) > 520 {
			t.Errorf("%s %.80s: %d %q (%v), want %d with an error", c.method, c.path, resp.StatusCode, a.Error, err, c.status)
		}
	}
}
