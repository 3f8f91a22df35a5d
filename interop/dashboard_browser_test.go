package interop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mqgo/mq"
	mqconsumer "github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// dashboardHandler is what the browser loads: the node's HTTP handler, as mqnode -http serves it.
func dashboardHandler(n *mq.Node) http.Handler { return n.Handler() }

// screenshotPolls is how many more polls of the page a screenshot waits for.
const screenshotPolls = 8

// browser starts Debian's headless chromium with a fresh profile and returns a tab's context.
// The flags keep it off the network: this machine has none, and chromium waits on connections
// (updates, sync, QUIC probes) that never come.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the dashboard browser test needs Debian's chromium: apt-get install -y chromium (%v)", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	return tab
}

// counter counts deliveries by body.
type counter struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *counter) listener(_ context.Context, msgs []*mqconsumer.Message) (mqconsumer.ConsumeResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		c.seen[string(m.Body)]++
	}
	return mqconsumer.ConsumeSuccess, nil
}

func (c *counter) count(body string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[body]
}

// waitCount polls until body was delivered at least times times, failing after 20 s.
func (c *counter) waitCount(t *testing.T, body string, times int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); c.count(body) < times; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q delivered %d times, want %d", body, c.count(body), times)
		}
	}
}

func startCountingConsumer(t *testing.T, n *mq.Node, group, topic string) (*counter, *mqconsumer.PushConsumer) {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	c, err := mqconsumer.NewPushConsumer(mqconsumer.WithNameServers(n.Addr()), mqconsumer.WithGroup(group),
		mqconsumer.WithInstanceName(uniqueInstance(t.Name()+group)), mqconsumer.WithLogger(&l),
		mqconsumer.WithConsumeFrom(mqconsumer.FromFirstOffset, time.Time{}),
		mqconsumer.WithRebalanceInterval(50*time.Millisecond), mqconsumer.WithPersistInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := &counter{seen: map[string]int{}}
	if err := c.Subscribe(topic, "*", got.listener); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return got, c
}

// watchPage makes every exception, console error and browser-log error (a CSP refusal, a
// failed request) of the tab fail the test at its end, opens url, and returns a wait for a
// visible element.
func watchPage(t *testing.T, tab context.Context, url string) func(sel string) {
	t.Helper()
	if err := chromedp.Do(tab); err != nil { // starts the browser and opens the tab
		t.Fatal(err)
	}
	consoleCtx, stopConsole := context.WithCancel(tab)
	messages := chromedp.Console(consoleCtx)
	var pageErrors []string
	var console sync.WaitGroup
	console.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				pageErrors = append(pageErrors, m.String())
			}
		}
	})
	t.Cleanup(func() {
		stopConsole()
		console.Wait()
		if len(pageErrors) > 0 {
			t.Errorf("the page reported errors:\n%s", strings.Join(pageErrors, "\n"))
		}
	})
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	return func(sel string) {
		t.Helper()
		if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Fatalf("waiting for %s: %v", sel, err)
		}
	}
}

// The dashboard in a real browser: it shows a topic the test created, a group's lag rising
// while nobody consumes and falling to 0 when its consumer runs, finds a message by key, and
// resets the group's offsets so that its consumer consumes again. With
// MQ_DASHBOARD_SCREENSHOT=file.png it writes a screenshot of the whole page there.
func TestDashboardInBrowser(t *testing.T) {
	tab := browser(t, 3*time.Minute)
	n := startNode(t)
	srv := httptest.NewServer(dashboardHandler(n))
	t.Cleanup(srv.Close)
	const topic, group, backlog = "DashboardOrders", "dashboard-orders-cg", 20
	createTopic(t, n, topic, 2)
	createTopic(t, n, "DashboardLoad", 2)
	p := newOurProducer(t, n)
	send := func(m *producer.Message) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	// Some steady traffic on another topic, so the chart and the rates have something to show.
	loadCtx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	t.Cleanup(func() { stopLoad(); load.Wait() })
	load.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 6000; i++ { // at most two minutes
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(loadCtx, 5*time.Second)
			_, _ = p.SendSync(ctx, producer.NewMessage("DashboardLoad", fmt.Appendf(nil, "load-%d", i)))
			cancel()
		}
	})
	startCountingConsumer(t, n, "dashboard-load-cg", "DashboardLoad")

	// The group consumes one message, so the broker has its offsets, and stops; then a
	// backlog piles up.
	send(producer.NewMessage(topic, []byte("first")))
	first, c := startCountingConsumer(t, n, group, topic)
	first.waitCount(t, "first", 1)
	for deadline := time.Now().Add(10 * time.Second); sum(committedOffsets(t, n, group, topic, 2)) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the offset of the first message was never committed")
		}
	}
	c.Close()
	const body = `{"order":7,"note":"hello from the browser test"}`
	for i := range backlog {
		m := producer.NewMessage(topic, fmt.Appendf(nil, `{"order":%d}`, i)).WithKeys(fmt.Sprintf("order-%d", i)).WithTags("paid")
		if i == 7 {
			m = producer.NewMessage(topic, []byte(body)).WithKeys("order-7").WithTags("paid").WithProperty("region", "eu-west")
		}
		send(m)
	}

	visible := watchPage(t, tab, srv.URL+"/")
	visible(`tr[data-broker="` + mq.DefaultBrokerName + `"]`)
	if name, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("#cluster-name"))); err != nil || name != mq.DefaultClusterName {
		t.Fatalf("header cluster %q (%v)", name, err)
	}
	if err := chromedp.Do(tab, chromedp.WaitNotPresent(chromedp.CSS(`tr[data-topic="TBW102"]`))); err != nil {
		t.Fatal(err)
	}
	visible(`tr[data-topic="` + topic + `"][data-messages="` + strconv.Itoa(backlog+1) + `"]`)

	// The lag of the offline group is the backlog; select the group to see its queues.
	visible(`tr[data-group="` + group + `"][data-lag="` + strconv.Itoa(backlog) + `"]`)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`tr[data-group="`+group+`"]`))); err != nil {
		t.Fatal(err)
	}
	visible(`#group-detail[data-group="` + group + `"] tr[data-queue^="` + topic + `/"]`)

	// The consumer runs again: the lag falls to 0, and the page shows the member.
	got, _ := startCountingConsumer(t, n, group, topic)
	visible(`tr[data-group="` + group + `"][data-lag="0"][data-members="1"]`)
	if got.count("first") != 0 {
		t.Fatal("the consumer began again from the start: its offsets were not kept")
	}

	// Find a message by topic and key.
	if err := chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS("#msg-topic"), topic),
		chromedp.SetValue(chromedp.CSS("#msg-key"), "order-7"),
		chromedp.Click(chromedp.CSS("#msg-search")),
	); err != nil {
		t.Fatal(err)
	}
	visible(`#msg-result[data-state="found"] pre.msg-body`)
	text, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("#msg-result pre.msg-body")))
	if err != nil || text != body {
		t.Fatalf("message body %q (%v), want %q", text, err, body)
	}
	region, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(`#msg-result tr[data-property="region"] td:last-child`)))
	if err != nil || region != "eu-west" {
		t.Fatalf("property region %q (%v)", region, err)
	}

	// Reset the group to a time before every message: the broker moves the running consumer,
	// which consumes the topic again.
	if err := chromedp.Do(tab,
		chromedp.SetValue(chromedp.CSS("#reset-topic"), topic),
		chromedp.SetValue(chromedp.CSS("#reset-time"), "2000-01-01T00:00"),
		chromedp.Click(chromedp.CSS("#reset-submit")),
	); err != nil {
		t.Fatal(err)
	}
	visible(`#reset-result.ok[data-queues="2"] tr[data-offset="0"]`)
	got.waitCount(t, "first", 1)
	visible(`tr[data-group="` + group + `"][data-lag="0"]`)

	if path := os.Getenv("MQ_DASHBOARD_SCREENSHOT"); path != "" {
		// A few more polls, so the chart has a line to show.
		polls, err := chromedp.Run(tab, chromedp.Evaluate[string](`window.scrollTo(0, 0); document.body.dataset.polls`))
		if err != nil {
			t.Fatal(err)
		}
		before, _ := strconv.Atoi(polls)
		visible(`body[data-polls="` + strconv.Itoa(before+screenshotPolls) + `"]`)
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", path, len(png))
	}
	if errs, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("#status-text"))); err != nil || !strings.HasPrefix(errs, "updated") {
		t.Fatalf("page status %q (%v)", errs, err)
	}
}
