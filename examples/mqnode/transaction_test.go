package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// crashListener kills the node (SIGKILL) inside the local transaction of "crash-...", so the
// commit it returns never reaches the broker; the checks after the restart commit it and
// "unknown-..." alike.
type crashListener struct {
	kill func()
}

func (l *crashListener) ExecuteLocalTransaction(_ context.Context, m *producer.Message, _ any) producer.LocalTransactionState {
	switch {
	case strings.HasPrefix(string(m.Body), "commit"):
		return producer.CommitTransaction
	case strings.HasPrefix(string(m.Body), "crash"):
		l.kill()
		return producer.CommitTransaction
	}
	return producer.UnknownTransaction
}

func (l *crashListener) CheckLocalTransaction(_ context.Context, m *producer.CheckedMessage) producer.LocalTransactionState {
	return producer.CommitTransaction
}

// Issue 14's crash test: an mqnode killed with SIGKILL between a transaction's prepare and its
// commit, and with a half message pending its check, comes back on its store and port; the
// checks commit both, and every committed message is delivered exactly once, the one committed
// before the kill included.
func TestBinaryTransactionSurvivesKill(t *testing.T) {
	t.Parallel() // child processes that mostly wait: side by side with the other binary tests
	if testing.Short() {
		t.Skip("builds a binary and kills it")
	}
	bin := buildMqnode(t)
	dir, addr := t.TempDir(), freeAddr(t)
	args := []string{"-listen", addr, "-store", filepath.Join(dir, "store"), "-ha-listen", "127.0.0.1:0",
		"-transaction-timeout", "200ms", "-transaction-check-interval", "50ms"}
	node := startMqnode(t, bin, args...)
	createTopicAt(t, addr, "TxKill")

	var mu sync.Mutex
	killed := make(chan struct{})
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Error(err)
		}
		err := <-node.done
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("mqnode after SIGKILL: %v", err)
		}
		node.done <- nil // startMqnode's cleanup expects an exit to read
		close(killed)
	}
	p, err := producer.New(producer.WithNameServers(addr), producer.WithGroup("tx-kill-pg"),
		producer.WithTransactionListener(&crashListener{kill: kill}), producer.WithHeartbeatInterval(50*time.Millisecond),
		producer.WithInstanceName(instanceName(t, "tx")))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for _, body := range []string{"commit-1", "unknown-1", "crash-1"} {
		if _, err := p.SendInTransaction(ctx, producer.NewMessage("TxKill", []byte(body)), nil); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	<-killed
	startMqnode(t, bin, args...)

	var seenMu sync.Mutex
	seen := map[string]int{}
	var where []string // each delivery: body, queue, offset, CommitLog offset, the half message it names
	c, err := consumer.NewPushConsumer(consumer.WithNameServers(addr), consumer.WithGroup("tx-kill-cg"),
		consumer.WithInstanceName(instanceName(t, "cg")), consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe("TxKill", "*", func(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
		seenMu.Lock()
		defer seenMu.Unlock()
		for _, m := range msgs {
			seen[string(m.Body)]++
			where = append(where, fmt.Sprintf("%s q%d@%d phy %d prepared %d", m.Body, m.Queue.QueueID, m.QueueOffset,
				m.CommitLogOffset, m.PreparedTransactionOffset))
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the three committed messages", func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		return seen["commit-1"] > 0 && seen["unknown-1"] > 0 && seen["crash-1"] > 0
	})
	// Only absence is checked after this pause: a slow machine can hide a bug, never fail the test.
	time.Sleep(time.Second)
	seenMu.Lock()
	defer seenMu.Unlock()
	for body, n := range seen {
		if n != 1 {
			t.Errorf("%s delivered %d times", body, n)
		}
	}
	if len(seen) != 3 || t.Failed() {
		t.Errorf("delivered %v, want the three committed messages once each; deliveries: %v", seen, where)
		dump := remoting.NewClient(remoting.ClientOptions{})
		defer dump.Close()
		for off := int64(0); off < 4000; {
			resp, err := dump.InvokeSync(context.Background(), addr, remoting.NewRequest(remoting.ViewMessageByID,
				map[string]string{"offset": fmt.Sprint(off)}, nil))
			if err != nil || resp.Code != remoting.Success {
				break
			}
			var r message.Record
			n, _ := message.DecodeRecord(resp.Body, &r, false)
			t.Logf("phy %d: %s q%d@%d sysflag %d prepared %d body %q props %q", off, r.Topic, r.QueueID, r.QueueOffset, r.SysFlag, r.PreparedTransactionOffset, r.Body, r.Properties)
			off += int64(n)
		}
	}
}

// createTopicAt creates a topic of 4 queues on the node at addr and waits for its route.
func createTopicAt(t *testing.T, addr, topic string) {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: 4,
		WriteQueueNums: 4, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := c.InvokeSync(ctx, addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)); err != nil || resp.Code != remoting.Success {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	waitFor(t, 10*time.Second, "route of "+topic, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := c.InvokeSync(ctx, addr, route.BuildGetRouteInfo(topic))
		return err == nil && resp.Code == remoting.Success
	})
}
