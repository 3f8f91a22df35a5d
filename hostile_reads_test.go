package mq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// Issue 25, items 5 and 6, against an in-process node and the mqnode binary, both with ACL
// (an admin, the honest clients' account, and an intruder that may publish anywhere and read
// only a topic of its own) and the dashboard:
//
//   - reads of message bodies by offset, key or id are checked on the message's own topic:
//     the intruder walks VIEW_MESSAGE_BY_ID from offset 0 past every stored record and gets
//     no byte of a message, nor through QUERY_MESSAGE, CONSUME_MESSAGE_DIRECTLY or
//     CONSUMER_SEND_MSG_BACK;
//   - the dashboard's API answers only under the node's own hosts, and a write needs the
//     page's token: a DNS-rebinding POST /api/reset (foreign Host and Origin) and a same-host
//     POST without the token are refused and leave the offsets as they were, and so are the
//     other writes (POST /api/brokers/clear, /api/dlq/resend).
//
// The honest producer and consumer, signing with their account, keep working throughout; the
// admin account reads what the intruder cannot (so the offsets walked are the messages').

// Accounts of hrACL.
var (
	hrAdmin    = remoting.Credentials{AccessKey: "hostileAdmin", SecretKey: "admin-secret-key"}
	hrHonest   = remoting.Credentials{AccessKey: "hostileHonest", SecretKey: "honest-secret-key"}
	hrIntruder = remoting.Credentials{AccessKey: "hostileIntruder", SecretKey: "intruder-secret-key"}
)

const hrACL = `accounts:
  - accessKey: hostileAdmin
    secretKey: admin-secret-key
    admin: true
  - accessKey: hostileHonest
    secretKey: honest-secret-key
    defaultGroupPerm: SUB
    topicPerms:
      - HostileHonest=PUB|SUB
  - accessKey: hostileIntruder
    secretKey: intruder-secret-key
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
    topicPerms:
      - HostileIntruder=PUB|SUB
`

const (
	hrSecretTopic   = "HostileSecret"
	hrIntruderTopic = "HostileIntruder"
	hrIntruderCG    = "hostile_intruder_cg"
	// hrIdleGroup has offsets on hsHonestTopic and nobody online to restore them after a
	// reset, so a reset that went through stays visible.
	hrIdleGroup = "hostile_idle_cg"
	// hrAllowedHost is given to -http-allowed-hosts; hrRebindHost is the attacker's.
	hrAllowedHost = "mq.hostile.example"
	hrRebindHost  = "rebind.evil.example"
	hrSecrets     = 5
)

// hrSecret is one message of hrSecretTopic.
type hrSecret struct {
	body, key, msgID, uniq string
	phy                    int64
}

func TestHostileReads(t *testing.T) {
	for _, mode := range []string{"inproc", "binary"} {
		t.Run(mode, func(t *testing.T) {
			e := &hsEnv{mode: mode}
			if mode == "binary" {
				e.bin = filepath.Join(t.TempDir(), "mqnode")
				if out, err := exec.Command("go", "build", "-o", e.bin, "./examples/mqnode").CombinedOutput(); err != nil {
					t.Fatalf("build mqnode: %v\n%s", err, out)
				}
			}
			aclFile := filepath.Join(t.TempDir(), "plain_acl.yml")
			if err := os.WriteFile(aclFile, []byte(hrACL), 0o600); err != nil {
				t.Fatal(err)
			}
			n := e.start(t, hsNodeConfig{aclFile: aclFile, creds: hrAdmin, http: true, allowedHosts: []string{hrAllowedHost}})
			if n.httpAddr == "" {
				t.Fatal("the node serves no dashboard")
			}
			honest := hsStartHonest(t, n.addr, hrHonest)
			honest.roundTrip(t, "warm-up")
			secrets := hrSendSecrets(t, n.addr)
			intruder, admin := hrClient(t, hrIntruder), hrClient(t, hrAdmin)

			t.Run("view-walk", func(t *testing.T) {
				hrViewWalk(t, n, intruder, admin, secrets)
				honest.roundTrip(t, "view-walk")
			})
			t.Run("other-reads", func(t *testing.T) {
				hrOtherReads(t, n, intruder, admin, secrets)
				honest.roundTrip(t, "other-reads")
			})
			t.Run("dashboard", func(t *testing.T) {
				hrDashboard(t, n, admin)
				honest.roundTrip(t, "dashboard")
			})
			n.checkAlive(t)
		})
	}
}

// hrClient is a remoting client of its own signing with c.
func hrClient(t *testing.T, c remoting.Credentials) *remoting.Client {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Hooks: []remoting.RPCHook{remoting.SigningHook(c)}})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// hrSendSecrets stores hrSecrets messages in hrSecretTopic, sent by the admin account.
func hrSendSecrets(t *testing.T, addr string) []hrSecret {
	t.Helper()
	p, err := producer.New(producer.WithNameServers(addr), producer.WithGroup("hostile_secret_pg"),
		producer.WithCredentials(hrAdmin), producer.WithSendTimeout(hsTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
	defer cancel()
	var out []hrSecret
	for i := range hrSecrets {
		s := hrSecret{body: fmt.Sprintf("secret-%d-%d", i, time.Now().UnixNano()), key: fmt.Sprintf("secret-key-%d", i)}
		res, err := p.SendSync(ctx, producer.NewMessage(hrSecretTopic, []byte(s.body)).WithKeys(s.key))
		if err != nil {
			t.Fatalf("send secret %d: %v", i, err)
		}
		s.msgID, s.uniq = res.OffsetMsgID, res.MsgID
		if _, s.phy, err = message.ParseOffsetMsgID(res.OffsetMsgID); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func hrView(t *testing.T, c *remoting.Client, addr string, off int64) *remoting.Command {
	t.Helper()
	return hsInvoke(t, c, addr, remoting.NewRequest(remoting.ViewMessageByID,
		remoting.EncodeHeader(&protocol.ViewMessageRequestHeader{Offset: off}), nil))
}

// hrRefused fails unless resp is NO_PERMISSION naming want, without a body.
func hrRefused(t *testing.T, what string, resp *remoting.Command, want string) {
	t.Helper()
	if resp.Code != remoting.NoPermission || !strings.Contains(resp.Remark, want) || len(resp.Body) != 0 {
		t.Errorf("%s: code %d remark %q, %d body bytes; want NO_PERMISSION naming %q, no body",
			what, resp.Code, resp.Remark, len(resp.Body), want)
	}
}

// hrViewWalk: VIEW_MESSAGE_BY_ID at every offset from 0 past the last secret gives the
// intruder nothing; the admin reads each secret at its offset.
func hrViewWalk(t *testing.T, n *hsNode, intruder, admin *remoting.Client, secrets []hrSecret) {
	last := secrets[len(secrets)-1].phy
	isSecret := map[int64]bool{}
	for _, s := range secrets {
		isSecret[s.phy] = true
	}
	refused := 0
	for off := int64(0); off <= last+1; off++ {
		resp := hrView(t, intruder, n.addr, off)
		if resp.Code == remoting.Success || len(resp.Body) != 0 {
			t.Fatalf("offset %d: code %d, %d body bytes served to the intruder", off, resp.Code, len(resp.Body))
		}
		if resp.Code == remoting.NoPermission {
			refused++
			if isSecret[off] && !strings.Contains(resp.Remark, "no SUB permission on topic "+hrSecretTopic) {
				t.Errorf("secret at %d refused with %q", off, resp.Remark)
			}
		}
	}
	// Every stored record up to the last secret was reached and refused: the secrets, the
	// honest messages before them.
	if refused < len(secrets)+1 {
		t.Errorf("the walk was refused %d times, want a refusal per record (at least %d)", refused, len(secrets)+1)
	}
	for _, s := range secrets {
		resp := hrView(t, admin, n.addr, s.phy)
		var rec message.Record
		if _, err := message.DecodeRecord(resp.Body, &rec, true); resp.Code != remoting.Success || err != nil || string(rec.Body) != s.body {
			t.Errorf("admin view of %d: code %d %q %v", s.phy, resp.Code, resp.Remark, err)
		}
	}
}

// hrOtherReads: queries by key and by unique key, CONSUME_MESSAGE_DIRECTLY and
// CONSUMER_SEND_MSG_BACK of a secret are refused to the intruder.
func hrOtherReads(t *testing.T, n *hsNode, intruder, admin *remoting.Client, secrets []hrSecret) {
	s := secrets[0]
	end := time.Now().Add(time.Hour).UnixMilli()
	query := func(c *remoting.Client, topic, key string, unique bool) *remoting.Command {
		return hsInvoke(t, c, n.addr, remoting.NewRequest(remoting.QueryMessage, remoting.EncodeHeader(
			&protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: 32, EndTimestamp: end, UniqueKeyQuery: unique}), nil))
	}
	hrRefused(t, "query by key", query(intruder, hrSecretTopic, s.key, false), hrSecretTopic)
	hrRefused(t, "query by unique key", query(intruder, hrSecretTopic, s.uniq, true), hrSecretTopic)
	// Under the topic it may read, the key finds nothing of another topic.
	if resp := query(intruder, hrIntruderTopic, s.key, false); resp.Code != remoting.QueryNotFound || len(resp.Body) != 0 {
		t.Errorf("query of the secret's key in the intruder's topic: code %d %q, %d bytes", resp.Code, resp.Remark, len(resp.Body))
	}
	if resp := query(admin, hrSecretTopic, s.key, false); resp.Code != remoting.Success || !bytes.Contains(resp.Body, []byte(s.body)) {
		t.Errorf("admin query: code %d %q", resp.Code, resp.Remark)
	}
	direct := remoting.NewRequest(remoting.ConsumeMessageDirectly, remoting.EncodeHeader(&protocol.ConsumeMessageDirectlyRequestHeader{
		ConsumerGroup: hrIntruderCG, ClientID: "127.0.0.1@intruder", MsgID: s.msgID}), nil)
	hrRefused(t, "consume directly", hsInvoke(t, intruder, n.addr, direct), hrSecretTopic)
	back := remoting.NewRequest(remoting.ConsumerSendMsgBack, remoting.EncodeHeader(&protocol.ConsumerSendMsgBackRequestHeader{
		Group: hrIntruderCG, Offset: s.phy, MaxReconsumeTimes: 16, DelayLevel: -1}), nil)
	hrRefused(t, "send back into the intruder's dead-letter topic", hsInvoke(t, intruder, n.addr, back), hrSecretTopic)
}

// hrDashboard: a DNS-rebinding reset and a same-host reset without the token are refused
// and leave the idle group's offsets; the page's own reset, with the token, goes through.
func hrDashboard(t *testing.T, n *hsNode, admin *remoting.Client) {
	before := hrIdleSetup(t, n, admin)
	if got := hrIdleOffsets(t, n, admin); !equalOffsets(before, got) {
		t.Fatalf("committed %v, read back %v", before, got)
	}
	_, port, err := net.SplitHostPort(n.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	rebind := net.JoinHostPort(hrRebindHost, port)
	reset := fmt.Sprintf(`{"group":%q,"topic":%q,"timestamp":0,"force":true}`, hrIdleGroup, hsHonestTopic)
	web := &http.Client{Timeout: hsTimeout, Transport: &http.Transport{}}
	t.Cleanup(web.CloseIdleConnections)

	if st, msg := hrHTTP(t, web, n.httpAddr, "GET", "/api/token", rebind, "", nil); st != http.StatusForbidden {
		t.Errorf("token under a foreign Host: %d %q", st, msg)
	}
	if st, msg := hrHTTP(t, web, n.httpAddr, "POST", "/api/reset", rebind, reset, map[string]string{
		"Content-Type": "application/json", "Origin": "http://" + rebind}); st != http.StatusForbidden || !strings.Contains(msg, hrRebindHost) {
		t.Errorf("DNS-rebinding reset: %d %q, want 403", st, msg)
	}
	if st, msg := hrHTTP(t, web, n.httpAddr, "POST", "/api/reset", "", reset, map[string]string{
		"Content-Type": "application/json"}); st != http.StatusForbidden || !strings.Contains(msg, "X-MQ-Token") {
		t.Errorf("same-host reset without the token: %d %q, want 403", st, msg)
	}
	if after := hrIdleOffsets(t, n, admin); !equalOffsets(before, after) {
		t.Fatalf("refused resets moved the offsets: %v -> %v", before, after)
	}
	// The other writes (forgetting down brokers, re-sending a dead letter) are refused alike.
	for path, body := range map[string]string{"/api/brokers/clear": `{"all":true}`,
		"/api/dlq/resend": fmt.Sprintf(`{"group":%q,"msgId":"7F0000010000000100000000000000AA"}`, hrIdleGroup)} {
		if st, msg := hrHTTP(t, web, n.httpAddr, "POST", path, rebind, body, map[string]string{
			"Content-Type": "application/json", "Origin": "http://" + rebind}); st != http.StatusForbidden || !strings.Contains(msg, hrRebindHost) {
			t.Errorf("DNS-rebinding POST %s: %d %q, want 403", path, st, msg)
		}
		if st, msg := hrHTTP(t, web, n.httpAddr, "POST", path, "", body, map[string]string{
			"Content-Type": "application/json"}); st != http.StatusForbidden || !strings.Contains(msg, "X-MQ-Token") {
			t.Errorf("same-host POST %s without the token: %d %q, want 403", path, st, msg)
		}
	}

	// The page's way: the token (here fetched under the name -http-allowed-hosts gave), then
	// the reset with it.
	var tok struct{ Token, Header string }
	st, body := hrHTTPBody(t, web, n.httpAddr, "GET", "/api/token", net.JoinHostPort(hrAllowedHost, port), "", nil)
	if st != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.Token == "" {
		t.Fatalf("token under an allowed host: %d %s", st, body)
	}
	if st, msg := hrHTTP(t, web, n.httpAddr, "POST", "/api/reset", "", reset, map[string]string{
		"Content-Type": "application/json", tok.Header: tok.Token, "Origin": "http://" + n.httpAddr}); st != http.StatusOK {
		t.Fatalf("the page's reset: %d %q", st, msg)
	}
	after := hrIdleOffsets(t, n, admin)
	for q, off := range after {
		if off != 0 {
			t.Errorf("queue %d at %d after the page's reset to time 0, want 0 (before: %v)", q, off, before)
		}
	}
}

// hrIdleSetup commits, for hrIdleGroup, the end of each of hsHonestTopic's queues, so that a
// reset to time 0 moves every queue that holds messages, and returns those offsets.
func hrIdleSetup(t *testing.T, n *hsNode, admin *remoting.Client) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	moved := false
	// A commit needs its group (RocketMQ 5): the operator creates the idle group.
	created := hsInvoke(t, admin, n.addr, remoting.NewRequest(remoting.UpdateAndCreateSubscription, nil,
		[]byte(`{"groupName":"`+hrIdleGroup+`","consumeEnable":true}`)))
	if created.Code != remoting.Success {
		t.Fatalf("create the idle group: %d %q", created.Code, created.Remark)
	}
	for q := range int32(4) {
		maxResp := hsInvoke(t, admin, n.addr, remoting.NewRequest(remoting.GetMaxOffset, remoting.EncodeHeader(
			&protocol.QueueHeader{Topic: hsHonestTopic, QueueID: q}), nil))
		end, err := parseOffset(maxResp)
		if err != nil {
			t.Fatalf("max offset of queue %d: %v", q, err)
		}
		update := hsInvoke(t, admin, n.addr, remoting.NewRequest(remoting.UpdateConsumerOffset, remoting.EncodeHeader(
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: hrIdleGroup, Topic: hsHonestTopic, QueueID: q, CommitOffset: end}), nil))
		if update.Code != remoting.Success {
			t.Fatalf("commit the idle group's offset: %d %q", update.Code, update.Remark)
		}
		out[q] = end
		moved = moved || end > 0
	}
	if !moved {
		t.Fatalf("no queue of %s holds a message: a reset could not show", hsHonestTopic)
	}
	return out
}

// hrIdleOffsets returns hrIdleGroup's offsets of hsHonestTopic's queues.
func hrIdleOffsets(t *testing.T, n *hsNode, admin *remoting.Client) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for q := range int32(4) {
		resp := hsInvoke(t, admin, n.addr, remoting.NewRequest(remoting.QueryConsumerOffset, remoting.EncodeHeader(
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: hrIdleGroup, Topic: hsHonestTopic, QueueID: q}), nil))
		off, err := parseOffset(resp)
		if err != nil {
			t.Fatalf("offset of queue %d: %v", q, err)
		}
		out[q] = off
	}
	return out
}

func parseOffset(resp *remoting.Command) (int64, error) {
	if resp.Code != remoting.Success {
		return 0, fmt.Errorf("code %d %q", resp.Code, resp.Remark)
	}
	var h protocol.OffsetHeader
	err := h.Decode(resp.ExtFields)
	return h.Offset, err
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// hrHTTP sends a request to the dashboard at addr, with Host host (addr when empty), and
// returns the status and the error text of a JSON error answer.
func hrHTTP(t *testing.T, c *http.Client, addr, method, path, host, body string, headers map[string]string) (int, string) {
	t.Helper()
	st, b := hrHTTPBody(t, c, addr, method, path, host, body, headers)
	var e struct{ Error string }
	_ = json.Unmarshal(b, &e)
	return st, e.Error
}

func hrHTTPBody(t *testing.T, c *http.Client, addr, method, path, host, body string, headers map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// hsServeHTTP serves h on 127.0.0.1:0 until the test ends, as mqnode -http does, and returns
// its address.
func hsServeHTTP(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: hsTimeout}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hsTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("dashboard server: %v", err)
		}
	})
	return ln.Addr().String()
}

// hsReadsArgs are mqnode's flags for hostile_reads_test.go's settings (the secret key goes in
// the environment, as mqnode wants it).
func hsReadsArgs(cfg hsNodeConfig) []string {
	var args []string
	if cfg.aclFile != "" {
		args = append(args, "-acl", cfg.aclFile)
	}
	if cfg.creds.AccessKey != "" {
		args = append(args, "-access-key", cfg.creds.AccessKey)
	}
	if cfg.http {
		args = append(args, "-http", "127.0.0.1:0")
	}
	if len(cfg.allowedHosts) > 0 {
		args = append(args, "-http-allowed-hosts", strings.Join(cfg.allowedHosts, ","))
	}
	return args
}

// hsDashboardAddr is the host:port of the dashboard URL in mqnode's started line, "" without
// one.
func hsDashboardAddr(rec map[string]any) string {
	s, _ := rec["dashboard"].(string)
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Host
}
