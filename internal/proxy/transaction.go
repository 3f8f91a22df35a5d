package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/mqgo/mq/internal/broker/transaction"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// maxTransactionMsgIDBytes bounds the message id an EndTransaction names (the bound SendMessage
// puts on a message id): the broker only carries it in the END_TRANSACTION header.
const maxTransactionMsgIDBytes = 128

// EndTransaction commits or rolls back a half message, as EndTransactionActivity does: the
// producer group is the topic (the proxy's convention, see Heartbeat), the transaction id the
// one SendMessage or a recovery command gave, and the decision goes to this node's broker as
// END_TRANSACTION. The proxy sends END_TRANSACTION one-way and answers OK; this endpoint waits
// for the broker's answer, so a transaction id that names no half message of the topic is
// answered INVALID_TRANSACTION_ID (the proxy's answer to a transaction id it keeps no data
// for) instead of vanishing.
func (s *service) EndTransaction(ctx context.Context, req *apiv2.EndTransactionRequest) (*apiv2.EndTransactionResponse, error) {
	answer := func(st *apiv2.Status) (*apiv2.EndTransactionResponse, error) {
		return &apiv2.EndTransactionResponse{Status: st}, nil
	}
	c, st := s.clients.get(ctx)
	if st != nil {
		return answer(st)
	}
	topic, st := resourceName(req.GetTopic(), "topic", apiv2.Code_ILLEGAL_TOPIC, names.CheckTopic)
	if st != nil {
		return answer(st)
	}
	id := req.GetTransactionId()
	if strings.TrimSpace(id) == "" {
		return answer(status(apiv2.Code_INVALID_TRANSACTION_ID, "transaction id cannot be empty"))
	}
	offsetMsgID, commitLogOffset, queueOffset, err := DecodeTransactionID(id)
	if err != nil {
		return answer(statusf(apiv2.Code_INVALID_TRANSACTION_ID, "%v: pass the transaction id SendMessage or the recovery command answered", err))
	}
	msgID := req.GetMessageId()
	if len(msgID) > maxTransactionMsgIDBytes || hasControl(msgID) {
		return answer(statusf(apiv2.Code_ILLEGAL_MESSAGE_ID, "message id longer than %d bytes or with a control character", maxTransactionMsgIDBytes))
	}
	b := s.broker()
	if b == nil || s.opts.BrokerAddr == "" {
		return answer(status(apiv2.Code_INTERNAL_SERVER_ERROR, "this node runs no broker to end the transaction on"))
	}
	if host, _, _ := message.ParseOffsetMsgID(offsetMsgID); host != b.Messages().StoreHost() {
		return answer(statusf(apiv2.Code_INVALID_TRANSACTION_ID,
			"transaction id %q names a half message stored at %s, not on this node's broker (%s): end it through the endpoint of the node it was sent to",
			id, host, b.Messages().StoreHost()))
	}
	var decision int32
	switch req.GetResolution() {
	case apiv2.TransactionResolution_COMMIT:
		decision = message.TransactionCommitType
	case apiv2.TransactionResolution_ROLLBACK:
		decision = message.TransactionRollbackType
	default:
		// The proxy sends TRANSACTION_NOT_TYPE on, which the broker ignores: the half message
		// waits for its next check either way.
		return answer(statusOK)
	}
	h := protocol.EndTransactionRequestHeader{
		ProducerGroup:        topic,
		TranStateTableOffset: queueOffset,
		CommitLogOffset:      commitLogOffset,
		CommitOrRollback:     decision,
		FromTransactionCheck: req.GetSource() == apiv2.TransactionSource_SOURCE_SERVER_CHECK,
		MsgID:                msgID,
		TransactionID:        id,
		BrokerName:           b.Options().Broker.Name,
	}
	resp, err := s.invoke(ctx, c, remoting.NewRequest(remoting.EndTransaction, remoting.EncodeHeader(&h), nil))
	if err != nil {
		return answer(fromError("end transaction", err))
	}
	if resp.Code == remoting.SystemError {
		switch resp.Remark {
		case transaction.RemarkHalfNotFound, transaction.RemarkGroupWrong,
			transaction.RemarkQueueOffsetWrong, transaction.RemarkCommitLogOffsetWrong:
			return answer(statusf(apiv2.Code_INVALID_TRANSACTION_ID,
				"transaction id %q names no half message of topic %s (the broker: %s)", id, topic, resp.Remark))
		}
	}
	if resp.Code != remoting.Success {
		return answer(fromRemoting(resp.Code, resp.Remark))
	}
	return answer(statusOK)
}

// maxPendingChecks bounds the transaction checks waiting to be written to one client's
// Telemetry stream (ours: the proxy's stream buffers without bound). A client that does not
// read its stream loses the checks past it; the broker checks those messages again later.
const maxPendingChecks = 64

// checkRelay tracks the transaction checks being written to Telemetry streams, each on a
// goroutine of its own so a stream that does not read holds up neither the broker nor the
// client's transport; close waits for them once the streams have ended.
type checkRelay struct {
	mu      sync.Mutex
	closed  bool
	pending map[*client]int
	wg      sync.WaitGroup
}

// start reserves a write for c, false when c has maxPendingChecks waiting or the endpoint is
// closing.
func (r *checkRelay) start(c *client) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.pending[c] >= maxPendingChecks {
		return false
	}
	if r.pending == nil {
		r.pending = make(map[*client]int)
	}
	r.pending[c]++
	r.wg.Add(1)
	return true
}

func (r *checkRelay) done(c *client) {
	r.mu.Lock()
	if r.pending[c]--; r.pending[c] <= 0 {
		delete(r.pending, c)
	}
	r.mu.Unlock()
	r.wg.Done()
}

// close refuses new writes and waits for those under way: the gRPC server has stopped, so
// every stream's Send has returned or will.
func (r *checkRelay) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}

// onNewClient installs the processors of broker requests for a client on its connection.
func (s *service) onNewClient(c *client) {
	c.tr.RegisterProcessor(remoting.CheckTransactionState, remoting.ProcessorFunc(
		func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			s.relayCheck(c, req)
			return nil, nil // CHECK_TRANSACTION_STATE is one-way
		}))
}

// relayCheck turns the broker's CHECK_TRANSACTION_STATE for a half message of the client's
// topic (its producer group) into a TelemetryCommand with a RecoverOrphanedTransactionCommand
// on the client's Telemetry stream, as GrpcClientChannel.processCheckTransaction does: the
// whole message and the transaction id of the copy the broker checks, which the SDK passes
// back to EndTransaction with SOURCE_SERVER_CHECK. A client without an open stream misses the
// check, as with the proxy; the broker checks again at its next round.
func (s *service) relayCheck(c *client, req *remoting.Command) {
	var h protocol.CheckTransactionStateRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		s.log.Warn().Err(err).Str("client", c.id).Msg("transaction check with a bad header dropped")
		return
	}
	msgs, err := decodeStored(req.Body)
	if err == nil && len(msgs) != 1 {
		err = fmt.Errorf("%d messages, want 1", len(msgs))
	}
	if err != nil {
		s.log.Warn().Err(err).Str("client", c.id).Msg("transaction check with a bad message dropped")
		return
	}
	m := &msgs[0]
	offsetMsgID := h.OffsetMsgID
	if _, off, err := message.ParseOffsetMsgID(offsetMsgID); err != nil || off != h.CommitLogOffset {
		offsetMsgID = message.OffsetMsgID(m.rec.StoreHost, h.CommitLogOffset)
	}
	cmd := &apiv2.TelemetryCommand{Command: &apiv2.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &apiv2.RecoverOrphanedTransactionCommand{
			Message:       m.toAPI(""),
			TransactionId: EncodeTransactionID(offsetMsgID, h.TranStateTableOffset),
		}}}
	ts := c.Stream()
	if ts == nil {
		s.log.Debug().Str("client", c.id).Str("msg_id", m.messageID()).Msg("transaction check dropped: the client has no Telemetry stream")
		return
	}
	if !s.checks.start(c) {
		s.log.Debug().Str("client", c.id).Str("msg_id", m.messageID()).Msg("transaction check dropped: the client's stream is not read")
		return
	}
	go func() {
		defer s.checks.done(c)
		if err := ts.send(cmd); err != nil {
			s.log.Debug().Err(err).Str("client", c.id).Msg("transaction check not written to the Telemetry stream")
		}
	}()
}
