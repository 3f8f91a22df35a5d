package dashboard_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/dashboard"
	"github.com/mqgo/mq/mqtest"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// status is the status of GET path and its error text, when it has one.
func (e *env) status(t *testing.T, path string) (int, string) {
	t.Helper()
	var a errorAnswer
	return e.get(t, path, &a), a.Error
}

// hostile checks that each GET path is answered status with an error text of bounded size.
func (e *env) hostile(t *testing.T, status int, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if st, msg := e.status(t, p); st != status || msg == "" || len(msg) > 520 {
			t.Errorf("GET %.90s: %d %q, want %d with an error", p, st, msg, status)
		}
	}
}

func (e *env) newProducer(t *testing.T, opts ...producer.Option) *producer.Producer {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	p, err := producer.New(append([]producer.Option{producer.WithNameServers(e.node.Addr()), producer.WithLogger(&l),
		producer.WithInstanceName(fmt.Sprintf("dash-p-%d", time.Now().UnixNano()))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func sendWith(t *testing.T, p *producer.Producer, m *producer.Message) *producer.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := p.SendSync(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type producersAnswer struct {
	Connections []struct{ ClientID, ClientAddr, Language string }
}

// A producer group's connections, found through a topic it sends to.
func TestProducersView(t *testing.T) {
	e := start(t)
	e.createTopic(t, "DashProduced", 2)
	p := e.newProducer(t, producer.WithGroup("dash-pg"))
	sendWith(t, p, producer.NewMessage("DashProduced", []byte("x")))
	var a producersAnswer
	if st := e.get(t, "/api/producers?group=dash-pg&topic=DashProduced", &a); st != http.StatusOK ||
		len(a.Connections) != 1 || a.Connections[0].ClientID == "" || a.Connections[0].ClientAddr == "" || a.Connections[0].Language == "" {
		t.Fatalf("producers: %d %+v", st, a)
	}
	e.hostile(t, http.StatusNotFound, "/api/producers?group=nobody-pg&topic=DashProduced", "/api/producers?group=dash-pg&topic=NoSuchTopic")
	e.hostile(t, http.StatusBadRequest, "/api/producers", "/api/producers?group=dash-pg", "/api/producers?topic=DashProduced",
		"/api/producers?group=a/b&topic=DashProduced", "/api/producers?group=dash-pg&topic="+strings.Repeat("t", 300),
		"/api/producers?group="+url.QueryEscape("g\x00")+"&topic=DashProduced")
}

type browseRow struct {
	MsgID, OffsetMsgID, Topic, OriginTopic string
	Keys                                   []string
	StoreTime                              int64
	BodySize                               int
}

type browseAnswer struct {
	Messages          []browseRow
	Truncated, Exists bool
	Errors            []string
}

func (b browseAnswer) keys() []string {
	var out []string
	for _, m := range b.Messages {
		out = append(out, m.Keys...)
	}
	return out
}

// Browsing by time lists the messages stored in the window, oldest first, the first max of
// them, on every queue.
func TestBrowseByTime(t *testing.T) {
	e := start(t)
	const topic = "DashBrowse"
	e.createTopic(t, topic, 2)
	sendKeys := func(prefix string, n int) {
		for i := range n {
			e.send(t, producer.NewMessage(topic, fmt.Appendf(nil, "%s-%d", prefix, i)).WithKeys(fmt.Sprintf("%s-%d", prefix, i)))
		}
	}
	sendKeys("early", 4)
	time.Sleep(30 * time.Millisecond)
	mid := time.Now().UnixMilli()
	time.Sleep(30 * time.Millisecond)
	sendKeys("late", 3)

	var b browseAnswer
	if st := e.get(t, fmt.Sprintf("/api/browse?topic=%s&begin=%d", topic, mid), &b); st != http.StatusOK {
		t.Fatalf("browse: %d", st)
	}
	byTime := func(x, y browseRow) int { return cmp.Compare(x.StoreTime, y.StoreTime) }
	if got := b.keys(); len(got) != 3 || !slices.IsSortedFunc(b.Messages, byTime) || b.Truncated || len(b.Errors) != 0 {
		t.Fatalf("from the middle: %v %+v", got, b)
	}
	for _, k := range b.keys() {
		if !strings.HasPrefix(k, "late-") {
			t.Fatalf("from the middle: %v", b.keys())
		}
	}
	if e.get(t, fmt.Sprintf("/api/browse?topic=%s&begin=0", topic), &b); len(b.Messages) != 7 || b.Truncated {
		t.Fatalf("from the start: %v truncated %v", b.keys(), b.Truncated)
	}
	if e.get(t, fmt.Sprintf("/api/browse?topic=%s&begin=0&end=%d", topic, mid), &b); len(b.Messages) != 4 || b.keys()[0] != "early-0" {
		t.Fatalf("up to the middle: %v", b.keys())
	}
	if e.get(t, fmt.Sprintf("/api/browse?topic=%s&begin=0&max=2", topic), &b); len(b.Messages) != 2 || !b.Truncated {
		t.Fatalf("max 2: %v truncated %v", b.keys(), b.Truncated)
	}
	if e.get(t, fmt.Sprintf("/api/browse?topic=%s&begin=%d", topic, time.Now().Add(time.Hour).UnixMilli()), &b); len(b.Messages) != 0 {
		t.Fatalf("from the future: %v", b.keys())
	}
	e.hostile(t, http.StatusNotFound, "/api/browse?topic=NoSuchTopic&begin=0")
	e.hostile(t, http.StatusBadRequest, "/api/browse?topic="+topic, "/api/browse?begin=0", "/api/browse?topic=a/b&begin=0",
		"/api/browse?topic="+topic+"&begin=-1", "/api/browse?topic="+topic+"&begin=abc", "/api/browse?topic="+topic+"&begin=1e3",
		"/api/browse?topic="+topic+"&begin=99999999999999999999", "/api/browse?topic="+topic+"&begin=253402300800000",
		"/api/browse?topic="+topic+"&begin=10&end=5", "/api/browse?topic="+topic+"&begin=0&end=x",
		"/api/browse?topic="+topic+"&begin=0&max=0", "/api/browse?topic="+topic+"&begin=0&max=129",
		"/api/browse?topic="+topic+"&begin=0&max=-1", "/api/browse?topic="+topic+"&begin=0&max=many")
}

type resendAnswer struct {
	ClientID, ConsumeResult, Error string
}

// A message its group gives up on is listed under the group's dead letters, with where it was
// first sent; re-sending it (RocketMQ dashboard's CONSUME_MESSAGE_DIRECTLY) needs a consumer of
// the group online, and hands it to that consumer's listener.
func TestDeadLettersAndResend(t *testing.T) {
	e := start(t)
	const topic, group = "DashDoomed", "dash-doomed-cg"
	e.createTopic(t, topic, 1)
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	var failing atomic.Bool
	failing.Store(true)
	got := make(chan string, 64)
	startGroup := func(instance string) *consumer.PushConsumer {
		c, err := consumer.NewPushConsumer(consumer.WithNameServers(e.node.Addr()), consumer.WithGroup(group),
			consumer.WithLogger(&l), consumer.WithInstanceName(instance), consumer.WithMaxReconsumeTimes(0),
			consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50*time.Millisecond),
			consumer.WithPersistInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				got <- string(m.Body)
			}
			if failing.Load() {
				return consumer.ConsumeRetryLater, nil
			}
			return consumer.ConsumeSuccess, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first := startGroup("dash-doomed-1")
	live := e.send(t, producer.NewMessage(topic, []byte("poison")).WithKeys("poison-key"))[0]

	var groups struct {
		Groups []struct {
			Group, Topic string
			Messages     int64
		}
	}
	eventually(t, "the dead-letter group listed", func() string {
		e.get(t, "/api/dlq", &groups)
		for _, g := range groups.Groups {
			if g.Group == group && g.Topic == "%DLQ%"+group && g.Messages == 1 {
				return ""
			}
		}
		return fmt.Sprintf("%+v", groups)
	})
	var b browseAnswer
	if st := e.get(t, "/api/dlq?group="+group, &b); st != http.StatusOK || len(b.Messages) != 1 || !b.Exists ||
		b.Messages[0].OriginTopic != topic || b.Messages[0].Topic != "%DLQ%"+group || b.Messages[0].Keys[0] != "poison-key" {
		t.Fatalf("dead letters: %d %+v", st, b)
	}
	letter := b.Messages[0].OffsetMsgID
	first.Close()
	<-got // the failed delivery

	token := e.token(t)
	resend := func(body string) (int, resendAnswer) {
		resp := e.post(t, "/api/dlq/resend", body, token)
		defer resp.Body.Close()
		var a resendAnswer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, a
	}
	req := fmt.Sprintf(`{"group":%q,"msgId":%q}`, group, letter)
	eventually(t, "the refusal without a consumer online", func() string {
		if st, a := resend(req); st != http.StatusConflict || !strings.Contains(a.Error, "no consumer") {
			return fmt.Sprintf("%d %+v", st, a)
		}
		return ""
	})

	failing.Store(false)
	second := startGroup("dash-doomed-2")
	eventually(t, "the re-send", func() string {
		st, a := resend(req)
		if st != http.StatusOK || a.ConsumeResult != "CR_SUCCESS" || a.ClientID != second.ClientID() {
			return fmt.Sprintf("%d %+v", st, a)
		}
		return ""
	})
	select {
	case body := <-got:
		if body != "poison" {
			t.Fatalf("the listener got %q", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the re-sent dead letter never reached the listener")
	}

	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"group":"` + group + `","msgId":"` + live.OffsetMsgID + `"}`, http.StatusBadRequest}, // not a dead letter
		{`{"group":"` + group + `","msgId":"zz"}`, http.StatusBadRequest},
		{`{"group":"` + group + `","msgId":"` + strings.Repeat("0", 65) + `"}`, http.StatusBadRequest},
		{`{"group":"a/b","msgId":"` + letter + `"}`, http.StatusBadRequest},
		{`{"group":"` + group + `","msgId":"` + letter + `","clientId":"a\nb"}`, http.StatusBadRequest},
		{`{"group":"` + group + `","msgId":"` + letter + `","clientId":"` + strings.Repeat("c", 256) + `"}`, http.StatusBadRequest},
		{`{"group":"` + group + `","msgId":"` + letter + `","bogus":1}`, http.StatusBadRequest},
		{`{"group":"` + group + `","msgId":"7F0000010000000100000000000000AA"}`, http.StatusNotFound}, // no broker of the cluster
		{`{"group":"` + group + `","msgId":"` + letter + `","clientId":"nobody@1"}`, http.StatusBadGateway},
	} {
		if st, a := resend(c.body); st != c.status || a.Error == "" {
			t.Errorf("%.100s: %d %+v, want %d with an error", c.body, st, a, c.status)
		}
	}
	if resp := e.post(t, "/api/dlq/resend", req, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("re-send without the token: %d", resp.StatusCode)
	}

	if st := e.get(t, "/api/dlq?group=dash-never-failed", &b); st != http.StatusOK || b.Exists || len(b.Messages) != 0 {
		t.Fatalf("a group without dead letters: %d %+v", st, b)
	}
	e.hostile(t, http.StatusBadRequest, "/api/dlq?group=", "/api/dlq?group=a/b", "/api/dlq?group="+strings.Repeat("g", 300),
		"/api/dlq?group="+group+"&max=1000", "/api/dlq?group="+group+"&begin=x")
}

type traceAnswer struct {
	Records []struct {
		Type, Group, Topic, ClientHost string
		Success                        bool
	}
}

// A traced message's send and consumption are found by its id in RMQ_SYS_TRACE_TOPIC.
func TestTraceLookup(t *testing.T) {
	e := start(t)
	const topic = "DashTraced"
	e.createTopic(t, topic, 1)
	p := e.newProducer(t, producer.WithGroup("dash-trace-pg"), producer.WithTrace(""))
	res := sendWith(t, p, producer.NewMessage(topic, []byte("traced")).WithKeys("trace-key"))
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(e.node.Addr()), consumer.WithGroup("dash-trace-cg"),
		consumer.WithLogger(&l), consumer.WithInstanceName("dash-trace-c"), consumer.WithTrace(""),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, "*", func(context.Context, []*consumer.Message) (consumer.ConsumeResult, error) {
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	var a traceAnswer
	eventually(t, "the send and the consumption traced", func() string {
		if st := e.get(t, "/api/trace?id="+res.MsgID, &a); st != http.StatusOK {
			return strconv.Itoa(st)
		}
		types := map[string]string{}
		for _, r := range a.Records {
			types[r.Type] = r.Group
		}
		if len(a.Records) < 3 || a.Records[0].Type != "Pub" || a.Records[0].Group != "dash-trace-pg" ||
			a.Records[0].Topic != topic || !a.Records[0].Success || types["SubAfter"] != "dash-trace-cg" {
			return fmt.Sprintf("%+v", a.Records)
		}
		return ""
	})
	e.hostile(t, http.StatusNotFound, "/api/trace?id=0A0B0C0D0E0F00112233445566778899AABBCCDD", "/api/trace?id=AB&topic=NoTraceTopic")
	e.hostile(t, http.StatusBadRequest, "/api/trace", "/api/trace?id=xyz", "/api/trace?id="+strings.Repeat("A", 65),
		"/api/trace?id=AB&topic=a/b", "/api/trace?id=AB&topic="+strings.Repeat("t", 300))
}

type haAnswer struct {
	Groups []struct {
		BrokerName string
		Members    []struct {
			BrokerID      int64
			Role, Addr    string
			Status        string
			MaxOffset     *int64
			LagBytes      *int64
			InSync, Alive *bool
		}
		Controller *struct {
			MasterBrokerID                 int64
			MasterEpoch, SyncStateSetEpoch int32
			SyncStateSet                   []int64
		}
	}
	Controller, ControllerError string
}

type overviewAnswer struct {
	Brokers []struct {
		Addr, Status string
		Registered   bool
		BrokerID     int64
	}
	History []struct{ T int64 }
}

// clusterEnv is a dashboard over an mqtest cluster.
func clusterEnv(t *testing.T, c *mqtest.Cluster) *env {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	a, err := admin.New(admin.Options{NameServers: c.NameServerAddrs(), Logger: &l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	srv := httptest.NewServer(serve(t, a, dashboard.Options{Logger: &l, Refresh: 20 * time.Millisecond}))
	t.Cleanup(srv.Close)
	return &env{url: srv.URL, adm: a}
}

// A master and its slave: the HA view shows the slave caught up; the slave stopped is shown
// down (not removed) on the brokers table and in the HA view until cleared.
func TestHAAndStoppedSlave(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{SlavesPerGroup: 1})
	e := clusterEnv(t, c)
	c.CreateTopic("DashHA", 2)
	p := c.NewProducer()
	for i := range 20 {
		sendWith(t, p, producer.NewMessage("DashHA", fmt.Appendf(nil, "ha-%d", i)))
	}
	slave := c.Slaves()[0]
	var h haAnswer
	eventually(t, "the slave caught up in the HA view", func() string {
		e.get(t, "/api/ha", &h)
		if len(h.Groups) != 1 || len(h.Groups[0].Members) != 2 || h.Controller != "" || h.ControllerError != "" {
			return fmt.Sprintf("%+v", h)
		}
		m, s := h.Groups[0].Members[0], h.Groups[0].Members[1]
		if m.Role != "MASTER" || s.Role != "SLAVE" || s.Addr != slave.Addr() || m.Status != "up" || s.Status != "up" ||
			m.MaxOffset == nil || *m.MaxOffset == 0 || s.LagBytes == nil || *s.LagBytes != 0 || *s.MaxOffset != *m.MaxOffset {
			return fmt.Sprintf("%+v", h.Groups[0].Members)
		}
		return ""
	})

	addr := slave.Addr()
	if err := c.Kill(slave); err != nil {
		t.Fatal(err)
	}
	var o overviewAnswer
	eventually(t, "the stopped slave shown down", func() string {
		e.get(t, "/api/overview", &o)
		for _, b := range o.Brokers {
			if b.Addr == addr && b.Status == "down" && !b.Registered && b.BrokerID == 1 && len(o.Brokers) == 2 {
				return ""
			}
		}
		return fmt.Sprintf("%+v", o.Brokers)
	})
	e.get(t, "/api/ha", &h)
	if s := h.Groups[0].Members[1]; s.Addr != addr || s.Status != "down" || s.LagBytes != nil {
		t.Fatalf("HA view of the stopped slave: %+v", h.Groups[0].Members)
	}
	resp := e.post(t, "/api/brokers/clear", fmt.Sprintf(`{"addr":%q}`, addr), e.token(t))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("clear: %d", resp.StatusCode)
	}
	if e.get(t, "/api/overview", &o); len(o.Brokers) != 1 {
		t.Fatalf("after clearing: %+v", o.Brokers)
	}
}

// In controller mode the HA view carries the controller leader's epochs and SyncStateSet.
func TestHAControllerMode(t *testing.T) {
	c := mqtest.StartCluster(t, mqtest.Config{Controllers: 1, ControllerMode: true, SlavesPerGroup: 1})
	e := clusterEnv(t, c)
	var h haAnswer
	eventually(t, "the controller's view", func() string {
		st, ok := c.ControllerGroup(0)
		if !ok || len(st.SyncStateSet) < 2 {
			return fmt.Sprintf("controller group %+v %v", st, ok)
		}
		e.get(t, "/api/ha", &h)
		if h.Controller == "" || len(h.Groups) != 1 || h.Groups[0].Controller == nil {
			return fmt.Sprintf("%+v", h)
		}
		g := h.Groups[0]
		if g.Controller.MasterBrokerID != st.MasterID || g.Controller.MasterEpoch != st.MasterEpoch ||
			fmt.Sprint(g.Controller.SyncStateSet) != fmt.Sprint(st.SyncStateSet) || len(g.Members) != 2 {
			return fmt.Sprintf("%+v, controller %+v", g, st)
		}
		for _, m := range g.Members {
			if m.InSync == nil || !*m.InSync || m.Alive == nil || !*m.Alive {
				return fmt.Sprintf("member %+v", m)
			}
		}
		return ""
	})
}
