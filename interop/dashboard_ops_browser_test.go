package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	mqconsumer "github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// startSlave runs a slave of master's broker group (broker id 1), registered with master's
// name service, which tells it where the master's HA listener is.
func startSlave(t *testing.T, master *mq.Node) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{
		Listen:            "127.0.0.1:0",
		Logger:            &l,
		DisableNameServer: true,
		NameServers:       []string{master.Addr()},
		Broker:            config.Broker{ID: 1},
		Store:             config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// apiGet decodes GET srv/path into v, as the page would get it.
func apiGet(t *testing.T, srv *httptest.Server, path string, v any) int {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// until polls ok every 20 ms, failing with what after 30 s.
func until(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}

// The dashboard's operations views in a real browser, over a master and its slave: a page
// opened after traffic has the throughput history at its first poll; the HA view shows the
// slave caught up; a producer group's connection; a traced message's send; a browse of a topic
// by time, whose row opens the message; a dead letter re-sent to a consumer of its group; and
// the slave, stopped, shown down (not removed) until cleared from the page. With
// MQ_DASHBOARD_OPS_SCREENSHOT=file.png it writes a screenshot of the whole page there while
// the slave is down (docs/dashboard.png).
func TestDashboardOperationsInBrowser(t *testing.T) {
	tab := browser(t, 3*time.Minute)
	master := startNode(t)
	slave := startSlave(t, master)
	srv := httptest.NewServer(dashboardHandler(master))
	t.Cleanup(srv.Close)
	const topic, deadTopic, pgroup, dgroup = "DashOps", "DashOpsDoomed", "dash-ops-pg", "dash-ops-dead-cg"
	createTopic(t, master, topic, 2)
	createTopic(t, master, deadTopic, 1)

	p := newOurProducer(t, master, producer.WithGroup(pgroup), producer.WithTrace(""))
	send := func(m *producer.Message) *producer.SendResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var traced *producer.SendResult
	for i := range 10 {
		r := send(producer.NewMessage(topic, fmt.Appendf(nil, "ops-%d", i)).WithKeys(fmt.Sprintf("ops-%d", i)))
		if i == 3 {
			traced = r
		}
	}

	// A group that fails its message once (maxReconsumeTimes 0) sends it to %DLQ%<group>; then
	// the group runs healthy again, and only a re-send can give it the message.
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	var failing atomic.Bool
	failing.Store(true)
	healthy := &counter{seen: map[string]int{}}
	startDead := func(instance string) *mqconsumer.PushConsumer {
		c, err := mqconsumer.NewPushConsumer(mqconsumer.WithNameServers(master.Addr()), mqconsumer.WithGroup(dgroup),
			mqconsumer.WithInstanceName(uniqueInstance(instance)), mqconsumer.WithLogger(&l), mqconsumer.WithMaxReconsumeTimes(0),
			mqconsumer.WithConsumeFrom(mqconsumer.FromFirstOffset, time.Time{}), mqconsumer.WithRebalanceInterval(50*time.Millisecond),
			mqconsumer.WithPersistInterval(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Subscribe(deadTopic, "*", func(ctx context.Context, msgs []*mqconsumer.Message) (mqconsumer.ConsumeResult, error) {
			if failing.Load() {
				return mqconsumer.ConsumeRetryLater, nil
			}
			return healthy.listener(ctx, msgs)
		}); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	failingConsumer := startDead("dash-ops-failing")
	send(producer.NewMessage(deadTopic, []byte("poison")).WithKeys("poison"))
	var dlq struct {
		Groups []struct {
			Group    string
			Messages int64
		}
	}
	until(t, "the dead letter", func() bool {
		apiGet(t, srv, "/api/dlq", &dlq)
		return len(dlq.Groups) == 1 && dlq.Groups[0].Group == dgroup && dlq.Groups[0].Messages == 1
	})
	failingConsumer.Close()
	failing.Store(false)
	startDead("dash-ops-healthy")

	// The page's first poll must find history the server kept; the trace must have been written.
	var overview struct{ History []json.RawMessage }
	until(t, "three points of throughput history", func() bool {
		apiGet(t, srv, "/api/overview", &overview)
		return len(overview.History) >= 3
	})
	var trace struct{ Records []json.RawMessage }
	until(t, "the trace of "+traced.MsgID, func() bool { return apiGet(t, srv, "/api/trace?id="+traced.MsgID, &trace) == http.StatusOK })

	visible := watchPage(t, tab, srv.URL+"/")
	visible(`body[data-polls="1"]`)
	points, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.dataset.historyPoints`))
	if n, _ := strconv.Atoi(points); err != nil || n < 3 {
		t.Fatalf("the page's first poll had %q points of history (%v), want the server's 3 or more", points, err)
	}
	slaveRow := `#brokers-body tr[data-addr="` + slave.BrokerAddr() + `"]`
	visible(slaveRow + `[data-status="up"][data-broker-id="1"]`)
	visible(`#brokers-body tr[data-addr="` + master.BrokerAddr() + `"][data-status="up"]`)

	// HA: the slave has everything the master has.
	visible(`#ha-body tr[data-ha-group="` + mq.DefaultBrokerName + `"]`)
	visible(`#ha-body tr[data-ha-broker="` + mq.DefaultBrokerName + `"][data-ha-id="1"][data-status="up"][data-lag="0"]`)

	// Producers of a group, on the topic's brokers.
	if err := chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS("#prod-group"), pgroup),
		chromedp.SetValue(chromedp.CSS("#prod-topic"), topic),
		chromedp.Click(chromedp.CSS("#prod-search")),
	); err != nil {
		t.Fatal(err)
	}
	visible(`#prod-result[data-state="found"] tr[data-producer]`)

	// The traced message's send.
	if err := chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS("#trace-id"), traced.MsgID),
		chromedp.Click(chromedp.CSS("#trace-search")),
	); err != nil {
		t.Fatal(err)
	}
	visible(`#trace-result[data-state="found"] tr[data-trace-type="Pub"][data-group="` + pgroup + `"]`)

	// Browse the topic from long ago: every message; a row opens the message in the lookup.
	if err := chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS("#browse-topic"), topic),
		chromedp.SetValue(chromedp.CSS("#browse-begin"), "2000-01-01T00:00"),
		chromedp.Click(chromedp.CSS("#browse-search")),
	); err != nil {
		t.Fatal(err)
	}
	visible(`#browse-result[data-state="found"][data-count="10"]`)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#browse-result tr[data-msg-id="`+traced.MsgID+`"]`))); err != nil {
		t.Fatal(err)
	}
	visible(`#msg-result[data-state="found"] article[data-msg-id="` + traced.MsgID + `"]`)
	if text, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("#msg-result pre.msg-body"))); err != nil || text != "ops-3" {
		t.Fatalf("the browsed message's body %q (%v)", text, err)
	}

	// The dead letter, re-sent to the healthy consumer of its group.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#dlq-body tr[data-dlq-group="`+dgroup+`"][data-messages="1"]`))); err != nil {
		t.Fatal(err)
	}
	visible(`#dlq-detail[data-group="` + dgroup + `"][data-state="loaded"] button[data-resend]`)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#dlq-messages button[data-resend]`))); err != nil {
		t.Fatal(err)
	}
	visible(`#dlq-result.ok[data-result="CR_SUCCESS"]`)
	healthy.waitCount(t, "poison", 1)

	// The slave stops: it stays on the page, down, until cleared.
	slaveAddr := slave.BrokerAddr()
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	visible(slaveRow + `[data-status="down"][data-registered="false"]`)
	if down, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("#card-down"))); err != nil || down != "1 down" {
		t.Fatalf("summary card %q (%v), want 1 down", down, err)
	}
	visible(`#ha-body tr[data-addr="` + slaveAddr + `"][data-status="down"]`)
	if path := os.Getenv("MQ_DASHBOARD_OPS_SCREENSHOT"); path != "" {
		if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.scrollTo(0, 0); true`)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", path, len(png))
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`button[data-clear="`+slaveAddr+`"]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.WaitNotPresent(chromedp.CSS(slaveRow))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.WaitNotPresent(chromedp.CSS(`#ha-body tr[data-addr="`+slaveAddr+`"]`))); err != nil {
		t.Fatal(err)
	}
	visible(`#brokers-body tr[data-addr="` + master.BrokerAddr() + `"][data-status="up"]`)
}
