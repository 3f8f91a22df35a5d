package mq_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TestPopBufferedAcksSurviveKill is the contract of acks merged in memory (ASYNC_FLUSH, the
// mqnode binary's default): a popped message's checkpoint is written before the pop is
// answered, and its acks at most popCkStayBufferTime after theirs. The node dies by SIGKILL
// while some acks are still in memory. Restarted on the same store, it never hands out a
// message acknowledged more than a stay time before the kill, hands out each unacknowledged
// one again exactly once and not before its invisible time, and the acks of the last stay
// time bring their message back at most once (at least once, as RocketMQ).
func TestPopBufferedAcksSurviveKill(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mqnode")
	if out, err := exec.Command("go", "build", "-o", bin, "./examples/mqnode").CombinedOutput(); err != nil {
		t.Fatalf("build mqnode: %v\n%s", err, out)
	}
	wrapper := filepath.Join(dir, "mqnode-pop-async")
	script := fmt.Sprintf("#!/bin/sh\nexec %q -pop-revive-interval 50ms \"$@\"\n", bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	const topic, group, invisible, total = "PopBufferedKilled", "PopBufferedKilledGroup", 3000, 12

	first := hsStartKillable(t, wrapper, store)
	c := hsDial(t, first.addr, 0)
	for i := range total {
		if resp, err := c.invoke(hsSendRequest(topic, 0, fmt.Appendf(nil, "b-%d", i))); err != nil || resp.Code != remoting.Success {
			t.Fatalf("send %d: %v %v", i, err, resp)
		}
	}
	var got []hsPopped
	for deadline := time.Now().Add(hsTimeout); len(got) < total && time.Now().Before(deadline); {
		got = append(got, hsPop(t, c, group, topic, invisible)...)
	}
	if len(got) != total {
		t.Fatalf("popped %d of %d", len(got), total)
	}
	popped, err := protocol.ParseExtraInfo(got[0].handle)
	if err != nil {
		t.Fatal(err)
	}
	// Half acknowledged, then more than a stay time for their record to be written; two more
	// acknowledged right before the kill, still in memory; the rest never.
	early, late := map[string]bool{}, map[string]bool{}
	for _, m := range got[:total/2] {
		hsAck(t, c, group, topic, m)
		early[m.body] = true
	}
	time.Sleep(3 * config.DefaultPopCkStayBufferTime)
	for _, m := range got[total/2 : total/2+2] {
		hsAck(t, c, group, topic, m)
		late[m.body] = true
	}
	first.kill()

	second := hsStartKillable(t, wrapper, store)
	c = hsDial(t, second.addr, 0)
	visibleAt := time.UnixMilli(popped.PopTime + popped.InvisibleTime)
	back := map[string]int{}
	unacked := total - len(early) - len(late)
	// Until the unacknowledged ones are back and a while after, for late ones and repeats.
	var quiet time.Time
	for deadline := time.Now().Add(hsTimeout + invisible*time.Millisecond); time.Now().Before(deadline); {
		ms := hsPop(t, c, group, topic, 60_000)
		if len(ms) > 0 && time.Now().Before(visibleAt) {
			t.Fatalf("%s came back before its invisible time ended", ms[0].body)
		}
		for _, m := range ms {
			if early[m.body] {
				t.Fatalf("%s, acknowledged more than a stay time before the kill, came back", m.body)
			}
			back[m.body]++
		}
		if len(back)-countIn(back, late) >= unacked && quiet.IsZero() {
			quiet = time.Now().Add(time.Second)
		}
		if !quiet.IsZero() && time.Now().After(quiet) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, m := range got[total/2:] {
		if n := back[m.body]; n > 1 || (!late[m.body] && n != 1) {
			t.Errorf("%s came back %d times (all: %v)", m.body, n, back)
		}
	}
	t.Logf("of %d acks in memory at the kill, %d came back", len(late), countIn(back, late))
	second.kill()
}

// countIn counts the keys of m that are in set.
func countIn(m map[string]int, set map[string]bool) int {
	n := 0
	for k := range m {
		if set[k] {
			n++
		}
	}
	return n
}
