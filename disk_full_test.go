package mq

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// A node on a nearly full file system (a tmpfs the test mounts) refuses sends with RocketMQ's
// answer (SERVICE_NOT_AVAILABLE, "the broker's disk is full [...]") once the disk is above
// diskSpaceWarningLevelRatio, accepts them again after space is freed, and every
// acknowledged message is consumed (issue 31).
func TestNodeDiskFullRefusesAndRecovers(t *testing.T) {
	const topic = "DiskFullTopic"
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "" {
			t.Skip("needs a small file system: mounting a tmpfs needs root (set CI to make this a failure)")
		}
		t.Fatal("mounting a tmpfs needs root")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", 12<<20)); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("needs a small file system: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}

	opts := testOptions(t)
	opts.DisableBroker = false
	opts.Store.Dir = filepath.Join(dir, "store")
	opts.Store.SegmentBytes = 1 << 20
	opts.Store.ConsumeQueueFileBytes = 2000 * 20
	opts.Store.MaxHashSlotNum, opts.Store.MaxIndexNum = 10_000, 40_000
	opts.Store.CleanResourceInterval = 20 * time.Millisecond
	// Keep every segment: the test consumes every acknowledged message.
	opts.Store.DiskMaxUsedSpaceRatio, opts.Store.DiskSpaceCleanForciblyRatio = 100, 100
	n, err := StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	p, err := n.NewProducer(producer.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	type at struct {
		qid int
		off int64
	}
	sent := map[at]string{}
	i := 0
	send := func() error {
		body := fmt.Sprintf("message %d %s", i, strings.Repeat("x", 1000))
		i++
		res, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(body)))
		if err == nil {
			sent[at{res.Queue.QueueID, res.QueueOffset}] = body
		}
		return err
	}
	var refusal *remoting.ResponseError
	for range 50_000 {
		err := send()
		if err == nil {
			continue
		}
		var re *remoting.ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("send %d: %v", i, err)
		}
		if re.Code == remoting.ServiceNotAvailable {
			refusal = re
			break
		}
		// A burst may reach a full disk before the next round measures it: an error answer
		// too (SYSTEM_ERROR, create mapped file failed); wait for the round.
		if re.Code != remoting.SystemError {
			t.Fatalf("send %d: %v", i, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if refusal == nil {
		t.Fatalf("no refusal after %d sends", i)
	}
	if !strings.Contains(refusal.Remark, "the broker's disk is full [CL:  0.9") {
		t.Fatalf("refusal remark %q", refusal.Remark)
	}
	// Still refused while full.
	if err := send(); !errors.As(err, &refusal) || refusal.Code != remoting.ServiceNotAvailable {
		t.Fatalf("send on a full disk: %v", err)
	}
	acked := len(sent)
	// Not ready while writes are refused, with the reason (a load balancer takes the node out).
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		n.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "refusing writes") {
		t.Fatalf("/readyz on a full disk: %d %q", code, body)
	}

	// Free space: sends are accepted again once a round measured it.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for send() != nil {
		if time.Now().After(deadline) {
			t.Fatal("sends still refused 30 s after space was freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 50 {
		if err := send(); err != nil {
			t.Fatalf("send after space was freed: %v", err)
		}
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz once space was freed: %d %q", code, body)
	}
	t.Logf("%d messages acknowledged before the refusal, %d in all", acked, len(sent))

	c, err := n.NewPushConsumer(consumer.WithGroup("diskfull-group"), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[at]string{}
	done := make(chan struct{})
	if err := c.Subscribe(topic, "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[at{m.Queue.QueueID, m.QueueOffset}] = string(m.Body)
		}
		if len(got) == len(sent) {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("consumed %d of %d acknowledged messages", len(got), len(sent))
	}
	mu.Lock()
	defer mu.Unlock()
	for k, body := range sent {
		if got[k] != body {
			t.Fatalf("queue %d offset %d: consumed %q, sent %q", k.qid, k.off, got[k], body)
		}
	}
}
