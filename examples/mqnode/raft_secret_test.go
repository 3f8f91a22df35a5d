package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/mqgo/mq/producer"
)

// TestBinaryControllerRaftSecret: controllers given a cluster secret through $MQ_CLUSTER_SECRET
// refuse an outsider's forged Raft RPCs on their Raft ports (each logs the refusal), no
// election follows, and the broker they made master goes on acknowledging sends.
func TestBinaryControllerRaftSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary and runs four processes")
	}
	bin := buildMqnode(t)
	t.Setenv("MQ_CLUSTER_SECRET", "binary-test-cluster-secret") // every child inherits it

	raftAddrs := make([]string, 3)
	var peers []string
	for i := range raftAddrs {
		raftAddrs[i] = reserveAddr(t)
		peers = append(peers, fmt.Sprintf("n%d=%s", i, raftAddrs[i]))
	}
	ctls := make([]*loggedNode, 3)
	var namesrvs []string
	for i := range ctls {
		ctls[i] = startLoggedNode(t, bin, append([]string{"-no-broker", "-listen", "127.0.0.1:0", "-store", t.TempDir(),
			"-controller-id", fmt.Sprint("n", i), "-controller-listen", raftAddrs[i],
			"-controller-peers", strings.Join(peers, ";")}, ctlControllerArgs...)...)
		namesrvs = append(namesrvs, ctls[i].namesrv)
	}
	ns := strings.Join(namesrvs, ";")
	broker := startLoggedNode(t, bin, append([]string{"-no-namesrv", "-namesrv", ns, "-controller", ns, "-broker-id", "1",
		"-listen", "127.0.0.1:0", "-ha-listen", "127.0.0.1:0", "-store", t.TempDir()}, ctlBrokerArgs...)...)
	broker.await(t, 0, "the broker serving as master", func(rec map[string]any) bool { return rec["message"] == "serving as master" })

	p, err := producer.New(producer.WithNameServers(namesrvs...), producer.WithGroup("raft-secret-pg"),
		producer.WithSendTimeout(3*time.Second), producer.WithPollNameServerInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(body string) {
		t.Helper()
		deadline := time.Now().Add(ctlWait)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := p.SendSync(ctx, producer.NewMessage(ctlTopic, []byte(body)))
			cancel()
			if err == nil && r.Status == producer.SendOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("send %q not acknowledged within %v: %v", body, ctlWait, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	send("before")

	marks := make([]int, len(ctls))
	for i, c := range ctls {
		marks[i] = c.lineCount()
	}
	outsider, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 1, 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer outsider.Close()
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("outsider"), Addr: []byte(outsider.LocalAddr())}
	const term = 1 << 32
	forged := []byte(`{"op":"applyBrokerId","cluster":"DefaultCluster","brokerName":"forged","brokerId":1,"addr":"203.0.113.66:10911","checkCode":"203.0.113.66:10911;1"}`)
	for i, addr := range raftAddrs {
		id, target := raft.ServerID(fmt.Sprint("n", i)), raft.ServerAddress(addr)
		if err := outsider.AppendEntries(id, target, &raft.AppendEntriesRequest{RPCHeader: header, Term: term,
			Entries: []*raft.Log{{Index: 1, Term: term, Type: raft.LogCommand, Data: forged}}, LeaderCommitIndex: 1},
			&raft.AppendEntriesResponse{}); err == nil {
			t.Errorf("a forged AppendEntries to n%d was answered", i)
		}
		if err := outsider.TimeoutNow(id, target, &raft.TimeoutNowRequest{RPCHeader: header}, &raft.TimeoutNowResponse{}); err == nil {
			t.Errorf("a TimeoutNow to n%d was answered", i)
		}
		if err := outsider.RequestVote(id, target, &raft.RequestVoteRequest{RPCHeader: header, Term: term, LastLogIndex: term,
			LastLogTerm: term, LeadershipTransfer: true}, &raft.RequestVoteResponse{}); err == nil {
			t.Errorf("a RequestVote to n%d was answered", i)
		}
	}
	for i, c := range ctls {
		c.await(t, marks[i], "the outsider refused", func(rec map[string]any) bool {
			return rec["message"] == "raft peer refused" && rec["level"] == "warn" && rec["addr"] != ""
		})
	}
	send("after")
	for i, c := range ctls {
		for _, rec := range c.linesFrom(marks[i]) {
			switch rec["message"] {
			case "entering candidate state", "entering follower state", "election won", "lost leadership", "leader ready":
				t.Errorf("controller n%d after the attack: %v", i, rec)
			}
		}
	}
}

func (n *loggedNode) lineCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.lines)
}

// linesFrom returns the JSON log lines from index from on.
func (n *loggedNode) linesFrom(from int) []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []map[string]any
	for _, l := range n.lines[from:] {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}
