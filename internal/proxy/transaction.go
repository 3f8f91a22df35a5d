package proxy

import (
	"context"
	"strings"

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
