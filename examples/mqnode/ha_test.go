package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// mqnodeProc is a running mqnode binary and the addresses its "mqnode started" line gave
// (ha: the master's HA listener, from its "serving" line).
type mqnodeProc struct {
	cmd                 *exec.Cmd
	namesrv, broker, ha string
	done                chan error
	drained             chan struct{}
}

// startMqnode runs bin with args and waits for its "mqnode started" log line. The process is
// stopped with SIGINT (SIGKILL after 30 s) when the test ends.
func startMqnode(t *testing.T, bin string, args ...string) *mqnodeProc {
	t.Helper()
	return startMqnodeEnv(t, bin, nil, args...)
}

// startMqnodeEnv is startMqnode with env added to the test's environment.
func startMqnodeEnv(t *testing.T, bin string, env []string, args ...string) *mqnodeProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &mqnodeProc{cmd: cmd, done: make(chan error, 1), drained: make(chan struct{})}
	lines := bufio.NewScanner(stderr)
	// A binary that never says it started is killed, which ends the scan below.
	stuck := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	started := false
	for !started && lines.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(lines.Bytes(), &rec); err != nil {
			continue
		}
		if rec["message"] == "serving" && rec["role"] == "ha" {
			p.ha, _ = rec["addr"].(string)
		}
		if rec["message"] == "mqnode started" {
			started = true
			p.namesrv, _ = rec["namesrv_addr"].(string)
			p.broker, _ = rec["broker_addr"].(string)
		}
	}
	stuck.Stop()
	go func() {
		defer close(p.drained)
		for lines.Scan() {
		}
	}()
	go func() {
		<-p.drained
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("mqnode %v: exit: %v", args, err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("mqnode %v still running 30 s after SIGINT", args)
		}
	})
	if !started || p.broker == "" && !slices.Contains(args, "-no-broker") {
		t.Fatalf("mqnode %v did not log that it started with a broker address", args)
	}
	return p
}

// maxOffset asks a broker for a queue's max offset (GET_MAX_OFFSET) over TCP.
func maxOffset(t *testing.T, c *remoting.Client, addr, topic string, queueID int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(queueID)}, nil)
	resp, err := c.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("GET_MAX_OFFSET at %s: %v", addr, err)
	}
	if resp.Code != remoting.Success {
		t.Fatalf("GET_MAX_OFFSET at %s: %d %s", addr, resp.Code, resp.Remark)
	}
	off, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	if err != nil {
		t.Fatalf("GET_MAX_OFFSET at %s: offset %q", addr, resp.ExtFields["offset"])
	}
	return off
}

// A master and a slave binary on loopback replicate: every message sent to the master is in
// the slave's queues, and the slave refuses sends. With a shared HA secret (the master's from
// -ha-secret, the slave's from MQ_HA_SECRET) too, and then a peer without it gets nothing.
func TestBinaryMasterSlaveReplicate(t *testing.T) {
	t.Parallel() // child processes that mostly wait: side by side with the other binary tests
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildMqnode(t)
	const secret = "a secret shared by the group"
	_, certFile, keyFile, caFile := testCertFiles(t, t.TempDir())
	for _, tc := range []struct {
		name       string
		masterArgs []string
		slaveEnv   []string
		slaveArgs  []string
	}{
		{"plain", nil, nil, nil},
		{"secret", []string{"-ha-secret", secret}, []string{"MQ_HA_SECRET=" + secret}, nil},
		{"tls", []string{"-ha-tls", "-tls-cert", certFile, "-tls-key", keyFile}, nil, []string{"-ha-tls", "-tls-ca", caFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master := startMqnode(t, bin, append([]string{"-listen", "127.0.0.1:0", "-store", t.TempDir(),
				"-role", "sync-master", "-ha-listen", "127.0.0.1:0"}, tc.masterArgs...)...)
			slave := startMqnodeEnv(t, bin, tc.slaveEnv, append([]string{"-listen", "127.0.0.1:0", "-store", t.TempDir(),
				"-role", "slave", "-no-namesrv", "-namesrv", master.namesrv}, tc.slaveArgs...)...)
			replicateBinary(t, master, slave, "HABIN"+tc.name)
			if tc.name == "secret" {
				peerWithoutSecretGetsNothing(t, master.ha)
			}
		})
	}
}

// peerWithoutSecretGetsNothing dials a master's HA port, answers its challenge with a wrong
// proof and checks that nothing but the challenge arrives before the master hangs up.
func peerWithoutSecretGetsNothing(t *testing.T, haAddr string) {
	t.Helper()
	if haAddr == "" {
		t.Fatal("the master logged no HA address")
	}
	c, err := net.Dial("tcp", haAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	challenge := make([]byte, 32)
	if _, err := io.ReadFull(c, challenge); err != nil {
		t.Fatalf("read challenge: %v", err)
	}
	if _, err := c.Write(make([]byte, 64)); err != nil { // nonce and a wrong proof
		t.Fatal(err)
	}
	rest, err := io.ReadAll(c)
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the master kept a peer with a wrong proof")
	}
	if len(rest) != 0 {
		t.Fatalf("a peer without the secret received %d bytes after the challenge", len(rest))
	}
}

// replicateBinary sends to the master until a send is acknowledged as replicated, then checks
// that both brokers' queues hold every message sent.
func replicateBinary(t *testing.T, master, slave *mqnodeProc, topic string) {
	t.Helper()
	p, err := producer.New(producer.WithNameServers(master.namesrv), producer.WithGroup("ha-pg"),
		producer.WithSendTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// A sync master answers SLAVE_NOT_AVAILABLE until the slave connected; those sends are
	// stored all the same. Send until one is acknowledged as replicated.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sent := map[int]int64{} // queue id -> messages sent
	for i := 0; ; i++ {
		r, err := p.SendSync(ctx, producer.NewMessage(topic, []byte(fmt.Sprintf("b-%d", i))))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		sent[r.Queue.QueueID]++
		if r.Status == producer.SendOK && i >= 20 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no send acknowledged by the slave")
		}
	}
	client := remoting.NewClient(remoting.ClientOptions{})
	defer client.Close()
	// ConsumeQueues are built asynchronously on both brokers: wait for each to count every
	// message sent.
	deadline := time.Now().Add(30 * time.Second)
	for q, n := range sent {
		for _, b := range []struct{ name, addr string }{{"master", master.broker}, {"slave", slave.broker}} {
			for {
				got := maxOffset(t, client, b.addr, topic, q)
				if got == n {
					break
				}
				if got > n || time.Now().After(deadline) {
					t.Fatalf("%s queue %d: max offset %d, sent %d", b.name, q, got, n)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}
