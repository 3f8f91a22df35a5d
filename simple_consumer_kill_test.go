package mq_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/freeport"
	"github.com/mqgo/mq/producer"
	"github.com/rs/zerolog"
)

// TestSimpleConsumerSurvivesKill is issue 28's acceptance in the binary mode: one
// consumer.SimpleConsumer over TCP receives every message of a pre-filled topic from the mqnode
// binary (SYNC_FLUSH), acknowledges half, and the node dies by SIGKILL between the receive and
// the acks of the rest. Restarted on the same store and port, the node hands the same consumer
// the unacknowledged messages again, each once and not before its invisible time, and never an
// acknowledged one.
func TestSimpleConsumerSurvivesKill(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mqnode")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/mqnode").CombinedOutput(); err != nil {
		t.Fatalf("build mqnode: %v\n%s", err, out)
	}
	// A fixed port, so the consumer's routes and connection find the restarted node; its flags
	// come last and win over hsStartKillable's -listen.
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "mqnode-simple")
	script := fmt.Sprintf("#!/bin/sh\nexec %q \"$@\" -listen %s -flush sync -pop-revive-interval 50ms\n", bin, addr)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	const topic, group, invisible = "SimpleKilled", "SimpleKilledGroup", 3 * time.Second

	first := hsStartKillable(t, wrapper, store)
	if first.addr != addr {
		t.Fatalf("mqnode listens on %s, not %s", first.addr, addr)
	}
	ctx := context.Background()
	lg := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	p, err := producer.New(producer.WithNameServers(addr), producer.WithGroup("simple-killed-pg"), producer.WithLogger(&lg))
	if err != nil {
		t.Fatal(err)
	}
	const total = 20
	for i := range total {
		if _, err := p.SendSync(ctx, producer.NewMessage(topic, fmt.Appendf(nil, "k-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()

	sc, err := consumer.NewSimpleConsumer(consumer.WithNameServers(addr), consumer.WithGroup(group),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithAwaitDuration(300*time.Millisecond),
		consumer.WithLogger(&lg))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Subscribe(topic, consumer.ByTag("*")); err != nil {
		t.Fatal(err)
	}
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var got []*consumer.MessageView
	for deadline := time.Now().Add(hsTimeout); len(got) < total && time.Now().Before(deadline); {
		views, err := sc.Receive(ctx, consumer.MaxReceiveMessageNum, invisible)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, views...)
	}
	if len(got) != total {
		t.Fatalf("received %d of %d", len(got), total)
	}
	acked := map[string]bool{}
	visibleAt := time.Time{}
	for i, v := range got {
		if i%2 == 0 {
			if err := sc.Ack(ctx, v); err != nil {
				t.Fatal(err)
			}
			acked[string(v.Body)] = true
		} else if u := v.InvisibleUntil(); visibleAt.IsZero() || u.Before(visibleAt) {
			visibleAt = u
		}
	}
	first.kill()

	second := hsStartKillable(t, wrapper, store)
	if second.addr != addr {
		t.Fatalf("restarted mqnode listens on %s, not %s", second.addr, addr)
	}
	back := map[string]int{}
	for deadline := time.Now().Add(hsTimeout + invisible); len(back) < total/2 && time.Now().Before(deadline); {
		// Long enough not to come back again within the test: each unacked message once.
		views, err := sc.Receive(ctx, consumer.MaxReceiveMessageNum, time.Minute)
		if err != nil {
			// The consumer's connection to the killed node breaks once; later receives redial.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if len(views) > 0 && time.Now().Before(visibleAt) {
			t.Fatalf("%s came back before its invisible time ended", views[0].Body)
		}
		for _, v := range views {
			if acked[string(v.Body)] {
				t.Fatalf("acknowledged message %s came back after SIGKILL", v.Body)
			}
			if v.DeliveryAttempt() != 2 {
				t.Errorf("%s came back with delivery attempt %d, want 2", v.Body, v.DeliveryAttempt())
			}
			back[string(v.Body)]++
		}
	}
	for _, v := range got {
		if !acked[string(v.Body)] && back[string(v.Body)] != 1 {
			t.Errorf("unacknowledged %s came back %d times, want once (all: %v)", v.Body, back[string(v.Body)], back)
		}
	}
	second.kill()
}
