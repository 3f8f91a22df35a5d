package proxy_test

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/node"
	iproxy "github.com/mqgo/mq/internal/proxy"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// sendHalf sends one transaction half message and returns its entry.
func sendHalf(t *testing.T, c apiv2.MessagingServiceClient, clientID, topic, id, body string) *apiv2.SendResultEntry {
	t.Helper()
	m := msg(topic, id, body)
	m.SystemProperties.MessageType = apiv2.MessageType_TRANSACTION
	resp, err := c.SendMessage(as(t, clientID), &apiv2.SendMessageRequest{Messages: []*apiv2.Message{m}})
	if err != nil || resp.Status.Code != apiv2.Code_OK || len(resp.Entries) != 1 || resp.Entries[0].TransactionId == "" {
		t.Fatalf("send half message %s: %v %v", id, resp, err)
	}
	return resp.Entries[0]
}

// endTx ends a transaction and returns the answer's status.
func endTx(t *testing.T, c apiv2.MessagingServiceClient, clientID string, req *apiv2.EndTransactionRequest) *apiv2.Status {
	t.Helper()
	resp, err := c.EndTransaction(as(t, clientID), req)
	if err != nil {
		t.Fatalf("end transaction %v: %v", req, err)
	}
	return resp.GetStatus()
}

func TestGRPCEndTransaction(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n)
	createTopic(t, n, c, "TxEnd", 1, "+message.type=TRANSACTION")
	createTopic(t, n, c, "TxOther", 1, "+message.type=TRANSACTION")
	const id = "tx-producer"
	_, reply := openTelemetry(t, c, as(t, id), producerSettings("TxEnd", "TxOther"))
	if reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	b := node.Of(n).Broker()
	delivered := func() int64 { return b.Store().MaxOffsetInQueue("TxEnd", 0) }
	end := func(e *apiv2.SendResultEntry, r apiv2.TransactionResolution) *apiv2.Status {
		return endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxEnd"},
			MessageId: e.MessageId, TransactionId: e.TransactionId, Resolution: r, Source: apiv2.TransactionSource_SOURCE_CLIENT})
	}

	commit := sendHalf(t, c, id, "TxEnd", "TX-COMMIT", "commit-me")
	rollback := sendHalf(t, c, id, "TxEnd", "TX-ROLLBACK", "roll-me-back")
	unknown := sendHalf(t, c, id, "TxEnd", "TX-UNKNOWN", "decided-later")
	if delivered() != 0 {
		t.Fatalf("TxEnd holds %d messages before any decision", delivered())
	}
	if st := end(commit, apiv2.TransactionResolution_COMMIT); st.Code != apiv2.Code_OK {
		t.Fatalf("commit: %v", st)
	}
	if st := end(rollback, apiv2.TransactionResolution_ROLLBACK); st.Code != apiv2.Code_OK {
		t.Fatalf("rollback: %v", st)
	}
	if st := end(unknown, apiv2.TransactionResolution_TRANSACTION_RESOLUTION_UNSPECIFIED); st.Code != apiv2.Code_OK {
		t.Fatalf("unspecified resolution: %v", st)
	}
	// Decisions are applied before EndTransaction answers: the rollback and the unspecified
	// resolution delivered nothing, and a second decision on a decided message changes nothing.
	if delivered() != 1 {
		t.Fatalf("TxEnd holds %d messages after one commit, one rollback and one unspecified", delivered())
	}
	if st := end(rollback, apiv2.TransactionResolution_COMMIT); st.Code != apiv2.Code_OK {
		t.Fatalf("commit after rollback: %v", st)
	}
	if st := end(commit, apiv2.TransactionResolution_COMMIT); st.Code != apiv2.Code_OK {
		t.Fatalf("second commit: %v", st)
	}
	if delivered() != 1 {
		t.Fatalf("TxEnd holds %d messages after repeated decisions, want 1", delivered())
	}
	// The message left undecided is still there to commit.
	if st := end(unknown, apiv2.TransactionResolution_COMMIT); st.Code != apiv2.Code_OK {
		t.Fatalf("commit of the undecided message: %v", st)
	}
	if delivered() != 2 {
		t.Fatalf("TxEnd holds %d messages after the second commit, want 2", delivered())
	}

	// Forged and malformed transaction ids are refused by name and decide nothing.
	pending := sendHalf(t, c, id, "TxEnd", "TX-PENDING", "still-pending")
	offsetMsgID, phy, queueOffset, err := iproxy.DecodeTransactionID(pending.TransactionId)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := message.ParseOffsetMsgID(offsetMsgID)
	units, err := b.Store().ConsumeQueueUnits("TxEnd", 0, 0, 1)
	if err != nil || len(units) != 1 {
		t.Fatalf("TxEnd's first unit: %v %v", units, err)
	}
	committed := message.OffsetMsgID(host, units[0].PhyOffset) // a delivered, not a half, message
	for name, txID := range map[string]string{
		"no dash":              "nonsense",
		"not hex":              "ZZZZ-1",
		"bad queue offset":     offsetMsgID + "-x",
		"negative offset":      offsetMsgID + "--1",
		"huge":                 strings.Repeat("A", 1<<20),
		"wrong queue offset":   iproxy.EncodeTransactionID(offsetMsgID, queueOffset+100),
		"wrong commitlog":      iproxy.EncodeTransactionID(message.OffsetMsgID(host, phy+1), queueOffset),
		"past the commitlog":   iproxy.EncodeTransactionID(message.OffsetMsgID(host, 1<<40), queueOffset),
		"a normal message":     iproxy.EncodeTransactionID(committed, queueOffset),
		"another broker":       iproxy.EncodeTransactionID(message.OffsetMsgID(netip.MustParseAddrPort("192.0.2.7:10911"), phy), queueOffset),
		"another store port":   iproxy.EncodeTransactionID(message.OffsetMsgID(netip.AddrPortFrom(host.Addr(), host.Port()+1), phy), queueOffset),
		"control characters":   "\x00\x01-\x02",
		"empty after trimming": "   ",
	} {
		st := endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxEnd"}, MessageId: "TX-PENDING",
			TransactionId: txID, Resolution: apiv2.TransactionResolution_COMMIT})
		if st.Code != apiv2.Code_INVALID_TRANSACTION_ID || st.Message == "" {
			t.Errorf("%s: %v, want INVALID_TRANSACTION_ID", name, st)
		}
	}
	// The right id under another topic names no half message of that topic's producer group.
	st := endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxOther"}, MessageId: "TX-PENDING",
		TransactionId: pending.TransactionId, Resolution: apiv2.TransactionResolution_COMMIT})
	if st.Code != apiv2.Code_INVALID_TRANSACTION_ID || !strings.Contains(st.Message, "TxOther") {
		t.Errorf("another topic's producer group: %v", st)
	}
	for _, topic := range []*apiv2.Resource{nil, {Name: "bad topic!"}} {
		st := endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: topic, TransactionId: pending.TransactionId,
			Resolution: apiv2.TransactionResolution_COMMIT})
		if st.Code != apiv2.Code_ILLEGAL_TOPIC {
			t.Errorf("topic %v: %v", topic, st)
		}
	}
	st = endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxEnd"}, MessageId: strings.Repeat("m", 200),
		TransactionId: pending.TransactionId, Resolution: apiv2.TransactionResolution_COMMIT})
	if st.Code != apiv2.Code_ILLEGAL_MESSAGE_ID {
		t.Errorf("long message id: %v", st)
	}
	if resp, err := c.EndTransaction(t.Context(), &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxEnd"},
		TransactionId: pending.TransactionId, Resolution: apiv2.TransactionResolution_COMMIT}); err != nil ||
		resp.Status.Code != apiv2.Code_CLIENT_ID_REQUIRED {
		t.Errorf("no client id: %v %v", resp, err)
	}
	if delivered() != 2 {
		t.Fatalf("TxEnd holds %d messages after the forgeries, want 2", delivered())
	}
	// The half message the forgeries aimed at is still pending, and its own id commits it.
	if st := end(pending, apiv2.TransactionResolution_COMMIT); st.Code != apiv2.Code_OK {
		t.Fatalf("commit after forgeries: %v", st)
	}
	var bodies []string
	for _, m := range pullAll(t, n, "TxEnd", 3) {
		bodies = append(bodies, string(m.Body)+"/"+m.MsgID)
	}
	if strings.Join(bodies, ",") != "commit-me/TX-COMMIT,decided-later/TX-UNKNOWN,still-pending/TX-PENDING" {
		t.Fatalf("committed messages read back: %v", bodies)
	}
}

// fastChecks makes the broker check a half message one second after it was sent.
func fastChecks(o *mq.Options) {
	o.Transactions.Timeout = time.Second
	o.Transactions.CheckInterval = 200 * time.Millisecond
}

// recvRecover reads the stream until a recovery command arrives.
func recvRecover(t *testing.T, stream apiv2.MessagingService_TelemetryClient) *apiv2.RecoverOrphanedTransactionCommand {
	t.Helper()
	for {
		cmd, err := stream.Recv()
		if err != nil {
			t.Fatalf("telemetry stream ended before a recovery command: %v", err)
		}
		if r := cmd.GetRecoverOrphanedTransactionCommand(); r != nil {
			return r
		}
	}
}

func TestGRPCTransactionCheckThroughTelemetry(t *testing.T) {
	n := startNode(t, fastChecks)
	c := dial(t, n)
	createTopic(t, n, c, "TxCheck", 2, "+message.type=TRANSACTION")
	const id = "tx-checked"
	stream, reply := openTelemetry(t, c, as(t, id), producerSettings("TxCheck"))
	if reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	m := msg("TxCheck", "TX-CHECKED-1", "checked body")
	m.SystemProperties.MessageType = apiv2.MessageType_TRANSACTION
	tag := "TagTx"
	m.SystemProperties.Tag = &tag
	m.SystemProperties.Keys = []string{"order-7"}
	m.UserProperties = map[string]string{"step": "reserve"}
	resp, err := c.SendMessage(as(t, id), &apiv2.SendMessageRequest{Messages: []*apiv2.Message{m}})
	if err != nil || resp.Status.Code != apiv2.Code_OK {
		t.Fatalf("send half message: %v %v", resp, err)
	}
	sent := resp.Entries[0]

	// The producer never ends the transaction: the broker's check reaches its stream.
	r := recvRecover(t, stream)
	got := r.GetMessage()
	sp := got.GetSystemProperties()
	sum := md5.Sum([]byte("checked body"))
	switch {
	case got.GetTopic().GetName() != "TxCheck", string(got.GetBody()) != "checked body":
		t.Fatalf("checked message: topic %v body %q", got.GetTopic(), got.GetBody())
	case sp.GetMessageId() != "TX-CHECKED-1", sp.GetMessageType() != apiv2.MessageType_TRANSACTION:
		t.Fatalf("checked message id %q type %v", sp.GetMessageId(), sp.GetMessageType())
	case sp.GetBodyDigest().GetType() != apiv2.DigestType_MD5 || sp.GetBodyDigest().GetChecksum() != strings.ToUpper(hex.EncodeToString(sum[:])):
		t.Fatalf("body digest %v", sp.GetBodyDigest())
	case sp.GetTag() != "TagTx", len(sp.GetKeys()) != 1 || sp.GetKeys()[0] != "order-7", got.GetUserProperties()["step"] != "reserve":
		t.Fatalf("tag %q keys %v user properties %v", sp.GetTag(), sp.GetKeys(), got.GetUserProperties())
	case len(got.GetUserProperties()) != 1:
		t.Fatalf("system properties leaked into the user properties: %v", got.GetUserProperties())
	}
	if _, _, _, err := iproxy.DecodeTransactionID(r.GetTransactionId()); err != nil {
		t.Fatalf("recovery command's transaction id: %v", err)
	}
	if max := node.Of(n).Broker().Store().MaxOffsetInQueue("TxCheck", 0) + node.Of(n).Broker().Store().MaxOffsetInQueue("TxCheck", 1); max != 0 {
		t.Fatalf("TxCheck holds %d messages before the check is answered", max)
	}
	// The SDK answers with EndTransaction from the check; the half message is committed.
	st := endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxCheck"}, MessageId: sp.GetMessageId(),
		TransactionId: r.GetTransactionId(), Resolution: apiv2.TransactionResolution_COMMIT,
		Source: apiv2.TransactionSource_SOURCE_SERVER_CHECK})
	if st.Code != apiv2.Code_OK {
		t.Fatalf("commit from the check: %v", st)
	}
	back := pullAll(t, n, "TxCheck", 1)
	if string(back[0].Body) != "checked body" || back[0].MsgID != "TX-CHECKED-1" || back[0].Properties["step"] != "reserve" {
		t.Fatalf("committed message: %q id %q props %v", back[0].Body, back[0].MsgID, back[0].Properties)
	}
	// The send's own transaction id now names a decided message: a late commit by the
	// client delivers nothing more.
	st = endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxCheck"}, MessageId: sent.MessageId,
		TransactionId: sent.TransactionId, Resolution: apiv2.TransactionResolution_COMMIT})
	if st.Code != apiv2.Code_OK {
		t.Fatalf("late commit: %v", st)
	}
	b := node.Of(n).Broker()
	if max := b.Store().MaxOffsetInQueue("TxCheck", 0) + b.Store().MaxOffsetInQueue("TxCheck", 1); max != 1 {
		t.Fatalf("TxCheck holds %d messages after a check's commit and a late commit, want 1", max)
	}
}

// A check for a client without an open Telemetry stream is dropped; the broker's next check,
// once the client has a stream again, reaches it.
func TestGRPCTransactionCheckWithoutStream(t *testing.T) {
	n := startNode(t, fastChecks)
	c := dial(t, n)
	createTopic(t, n, c, "TxNoStream", 1, "+message.type=TRANSACTION")
	const id = "tx-streamless"
	stream, reply := openTelemetry(t, c, as(t, id), producerSettings("TxNoStream"))
	if reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	// The producer closes its stream; it stays registered with the broker as the topic's
	// producer (its connection lives until it expires).
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream after CloseSend: %v", err)
	}
	sendHalf(t, c, id, "TxNoStream", "TX-LATER", "checked later")
	// Every check re-puts the half message, so the half queue growing says checks went out.
	b := node.Of(n).Broker()
	deadline := time.Now().Add(wait)
	for b.Store().MaxOffsetInQueue(names.TopicTransHalf, 0) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("half queue at %d: the broker checked less than twice", b.Store().MaxOffsetInQueue(names.TopicTransHalf, 0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A stream opened now gets a later check and commits through it, once.
	stream, _ = openTelemetry(t, c, as(t, id), producerSettings("TxNoStream"))
	r := recvRecover(t, stream)
	if r.GetMessage().GetSystemProperties().GetMessageId() != "TX-LATER" {
		t.Fatalf("recovery command for %v", r.GetMessage().GetSystemProperties())
	}
	st := endTx(t, c, id, &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxNoStream"}, MessageId: "TX-LATER",
		TransactionId: r.GetTransactionId(), Resolution: apiv2.TransactionResolution_COMMIT,
		Source: apiv2.TransactionSource_SOURCE_SERVER_CHECK})
	if st.Code != apiv2.Code_OK {
		t.Fatalf("commit from the check: %v", st)
	}
	if got := pullAll(t, n, "TxNoStream", 1); string(got[0].Body) != "checked later" {
		t.Fatalf("committed message %q", got[0].Body)
	}
	if max := b.Store().MaxOffsetInQueue("TxNoStream", 0); max != 1 {
		t.Fatalf("TxNoStream holds %d messages, want 1", max)
	}
}

// A producer whose Telemetry stream never reads is sent checks until its stream's flow
// control window is full; the writes waiting for it are bounded, another producer's checks
// still arrive, and Close ends every writer.
func TestGRPCTransactionChecksToAStreamThatNeverReads(t *testing.T) {
	n := startNode(t, func(o *mq.Options) {
		o.Transactions.Timeout = time.Second
		o.Transactions.CheckInterval = 500 * time.Millisecond
	})
	c := dial(t, n)
	createTopic(t, n, c, "TxHog", 1, "+message.type=TRANSACTION")
	createTopic(t, n, c, "TxHonest", 1, "+message.type=TRANSACTION")
	// The hog's connection keeps gRPC's smallest fixed windows (no window growth), so a few
	// unread commands fill them.
	cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hog := apiv2.NewMessagingServiceClient(cc)
	hogStream, err := hog.Telemetry(as(t, "tx-hog"))
	if err != nil {
		t.Fatal(err)
	}
	if err := hogStream.Send(&apiv2.TelemetryCommand{Command: &apiv2.TelemetryCommand_Settings{Settings: producerSettings("TxHog")}}); err != nil {
		t.Fatal(err)
	}
	// Wait for the registration (the settings answer stays unread in the hog's window).
	deadline := time.Now().Add(wait)
	for len(node.Of(n).Broker().Clients().ProducerConns("TxHog")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the hog never registered as TxHog's producer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	const halves = 100
	body := strings.Repeat("h", 16<<10)
	for i := range halves {
		sendHalf(t, hog, "tx-hog", "TxHog", "HOG-"+strconv.Itoa(i), body)
	}
	// Once a round has checked every half message, the writers waiting on the hog's stream
	// are at their bound.
	b := node.Of(n).Broker()
	deadline = time.Now().Add(wait)
	for b.Store().MaxOffsetInQueue(names.TopicTransHalf, 0) < 2*halves {
		if time.Now().After(deadline) {
			t.Fatalf("half queue at %d: no full check round", b.Store().MaxOffsetInQueue(names.TopicTransHalf, 0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if w := checkWriters(); w == 0 || w > 64 {
		t.Fatalf("%d check writers wait on the hog's stream: want some, at most 64", w)
	}

	// An honest producer's check still arrives and commits.
	honest, reply := openTelemetry(t, c, as(t, "tx-honest"), producerSettings("TxHonest"))
	if reply.GetStatus().GetCode() != apiv2.Code_OK {
		t.Fatalf("settings: %v", reply.GetStatus())
	}
	sendHalf(t, c, "tx-honest", "TxHonest", "HONEST-1", "honest")
	r := recvRecover(t, honest)
	st := endTx(t, c, "tx-honest", &apiv2.EndTransactionRequest{Topic: &apiv2.Resource{Name: "TxHonest"}, MessageId: "HONEST-1",
		TransactionId: r.GetTransactionId(), Resolution: apiv2.TransactionResolution_COMMIT,
		Source: apiv2.TransactionSource_SOURCE_SERVER_CHECK})
	if st.Code != apiv2.Code_OK {
		t.Fatalf("honest commit from the check: %v", st)
	}
	if got := pullAll(t, n, "TxHonest", 1); string(got[0].Body) != "honest" {
		t.Fatalf("honest message %q", got[0].Body)
	}
	if w := checkWriters(); w > 64 {
		t.Fatalf("%d check writers after more rounds: the bound is 64", w)
	}

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(wait)
	for serverGoroutines() != "" {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines of the endpoint after Close:\n%s", serverGoroutines())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkWriters counts the goroutines writing a transaction check to a Telemetry stream.
func checkWriters() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "proxy.(*service).relayCheck.func") {
			count++
		}
	}
	return count
}
