package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// Issue 14's timer crash test: an mqnode killed with SIGKILL while timer messages are pending
// (ten delivered already, ten not yet due, both counted before the kill) comes back on its store and port and delivers each
// exactly once, none before its time.
func TestBinaryTimersSurviveKill(t *testing.T) {
	t.Parallel() // child processes that mostly wait: side by side with the other binary tests
	if testing.Short() {
		t.Skip("builds a binary and kills it")
	}
	bin := buildMqnode(t)
	dir, addr := t.TempDir(), freeAddr(t)
	args := []string{"-listen", addr, "-store", filepath.Join(dir, "store"), "-ha-listen", "127.0.0.1:0"}
	node := startMqnode(t, bin, args...)
	createTopicAt(t, addr, "TimerKill")
	p, err := producer.New(producer.WithNameServers(addr), producer.WithGroup("timer-kill-pg"),
		producer.WithInstanceName(instanceName(t, "p")))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	due := map[string]time.Time{}
	send := func(i int, after time.Duration) {
		at := time.Now().Add(after)
		body := fmt.Sprintf("t%02d", i)
		if _, err := p.SendSync(ctx, producer.NewMessage("TimerKill", []byte(body)).WithDeliverTime(at)); err != nil {
			t.Fatal(err)
		}
		due[body] = at
	}
	admin := remoting.NewClient(remoting.ClientOptions{})
	defer admin.Close()
	delivered := func() int64 {
		var n int64
		for q := range 4 {
			n += maxOffset(t, admin, addr, "TimerKill", q)
		}
		return n
	}
	// Ten come due, and are delivered, before the kill; ten are pending when it lands.
	for i := range 10 {
		send(i, time.Duration(100+i*20)*time.Millisecond)
	}
	waitFor(t, 30*time.Second, "the first ten timer messages delivered", func() bool { return delivered() == 10 })
	for i := 10; i < 20; i++ {
		send(i, 5*time.Second+time.Duration(i*20)*time.Millisecond)
	}
	if n := delivered(); n != 10 {
		t.Fatalf("%d timer messages delivered before the kill, want 10: the pending ones came due early, or the machine stalled 5 s", n)
	}
	if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = <-node.done
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("mqnode after SIGKILL: %v", err)
	}
	node.done <- nil // startMqnode's cleanup expects an exit to read
	startMqnode(t, bin, args...)

	var mu sync.Mutex
	seen := map[string]int{}
	var early []string
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(addr), consumer.WithGroup("timer-kill-cg"),
		consumer.WithInstanceName(instanceName(t, "cg")), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe("TimerKill", "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			seen[string(m.Body)]++
			// The store time of the delivered record is when the timer released it.
			if m.StoreTime.Before(due[string(m.Body)].Truncate(time.Millisecond)) {
				early = append(early, fmt.Sprintf("%s stored %v before its time", m.Body, due[string(m.Body)].Sub(m.StoreTime)))
			}
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every timer message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == len(due)
	})
	// Only absence is checked after this pause: a slow machine can hide a bug, never fail the test.
	time.Sleep(time.Second)
	mu.Lock()
	defer mu.Unlock()
	for body, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", body, n)
		}
	}
	if len(early) > 0 {
		t.Errorf("delivered early: %v", early)
	}
}
