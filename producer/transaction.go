package producer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// LocalTransactionState is what a local transaction came to (RocketMQ LocalTransactionState).
type LocalTransactionState int

// Local transaction states.
const (
	// UnknownTransaction leaves the message for the broker's next check (RocketMQ UNKNOW).
	UnknownTransaction LocalTransactionState = iota
	// CommitTransaction makes the message visible to consumers.
	CommitTransaction
	// RollbackTransaction discards it.
	RollbackTransaction
)

func (s LocalTransactionState) String() string {
	switch s {
	case CommitTransaction:
		return "COMMIT_MESSAGE"
	case RollbackTransaction:
		return "ROLLBACK_MESSAGE"
	}
	return "UNKNOW"
}

// sysFlag is the END_TRANSACTION commitOrRollback value of s.
func (s LocalTransactionState) sysFlag() int32 {
	switch s {
	case CommitTransaction:
		return message.TransactionCommitType
	case RollbackTransaction:
		return message.TransactionRollbackType
	}
	return message.TransactionNotType
}

// TransactionListener runs a producer's local transactions and answers the brokers' checks of
// those left unknown (RocketMQ TransactionListener). Both are called on the producer's
// goroutines and may block for the length of the transaction.
type TransactionListener interface {
	// ExecuteLocalTransaction runs the local transaction of msg, which the broker stored as a
	// half message, invisible to consumers until this returns CommitTransaction. arg is
	// SendInTransaction's.
	ExecuteLocalTransaction(ctx context.Context, msg *Message, arg any) LocalTransactionState
	// CheckLocalTransaction tells a broker asking about a half message left unknown (or whose
	// decision was lost) what became of its transaction.
	CheckLocalTransaction(ctx context.Context, msg *CheckedMessage) LocalTransactionState
}

// CheckedMessage is a half message a broker asks about (CHECK_TRANSACTION_STATE).
type CheckedMessage struct {
	Topic string // without the producer's namespace
	Body  []byte
	Tags  string
	Keys  []string
	// Properties are all of the message's properties, the system ones included.
	Properties map[string]string
	// MsgID is the id SendInTransaction's result gave (UNIQ_KEY), TransactionID its
	// transaction id.
	MsgID         string
	TransactionID string
}

// TransactionSendResult is SendInTransaction's outcome: where the half message went, and what
// its local transaction decided.
type TransactionSendResult struct {
	*SendResult
	State LocalTransactionState
}

// WithTransactionListener makes the producer transactional (RocketMQ TransactionMQProducer):
// SendInTransaction runs l's local transactions, and checks from brokers about this group's
// half messages are answered by l.
func WithTransactionListener(l TransactionListener) Option {
	return optionFunc(func(c *config) { c.txListener = l })
}

// ErrNotTransactional is SendInTransaction on a producer without WithTransactionListener.
var ErrNotTransactional = errors.New("producer: no transaction listener (WithTransactionListener)")

// SendInTransaction sends msg as a half message (RocketMQ sendMessageInTransaction), runs the
// local transaction with arg once a broker stored it, and tells that broker the outcome with
// END_TRANSACTION (one-way, as RocketMQ): committed, the message becomes visible; rolled back,
// it is discarded; unknown, the broker checks later (TransactionListener.CheckLocalTransaction).
// A send that fails returns its error and runs no transaction. A delay level is not allowed on
// a transactional message (RocketMQ clears it; the broker delays only at commit).
func (p *Producer) SendInTransaction(ctx context.Context, msg *Message, arg any) (*TransactionSendResult, error) {
	l := p.cfg.txListener
	if l == nil {
		return nil, ErrNotTransactional
	}
	if msg == nil {
		return nil, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	half := *msg
	half.DelayTimeLevel = 0
	half.Properties = maps.Clone(msg.Properties)
	if half.Properties == nil {
		half.Properties = make(map[string]string, 2)
	}
	delete(half.Properties, message.PropertyDelayTimeLevel)
	half.Properties[message.PropertyTransactionPrepared] = "true"
	half.Properties[message.PropertyProducerGroup] = p.wireGroup
	res, err := p.SendSync(ctx, &half)
	if err != nil {
		return nil, err
	}
	state := RollbackTransaction
	if res.Status == SendOK {
		state = l.ExecuteLocalTransaction(ctx, msg, arg)
	}
	if err := p.endTransaction(ctx, res, state); err != nil {
		p.log.Warn().Err(err).Str("msg_id", res.MsgID).Stringer("state", state).
			Msg("END_TRANSACTION not sent; the broker will check")
	}
	return &TransactionSendResult{SendResult: res, State: state}, nil
}

// endTransaction tells the broker that stored res's half message what its transaction came to.
func (p *Producer) endTransaction(ctx context.Context, res *SendResult, state LocalTransactionState) error {
	_, phyOffset, err := message.ParseOffsetMsgID(res.OffsetMsgID)
	if err != nil {
		return fmt.Errorf("producer: offset message id %q: %w", res.OffsetMsgID, err)
	}
	addr := p.inst.MasterAddr(res.Queue.BrokerName)
	if addr == "" {
		return fmt.Errorf("producer: no address for broker %s", res.Queue.BrokerName)
	}
	txID := res.TransactionID
	if txID == "" {
		txID = res.MsgID
	}
	h := protocol.EndTransactionRequestHeader{ProducerGroup: p.wireGroup, TranStateTableOffset: res.QueueOffset,
		CommitLogOffset: phyOffset, CommitOrRollback: state.sysFlag(), MsgID: res.MsgID, TransactionID: txID,
		BrokerName: res.Queue.BrokerName}
	return p.tr.InvokeOneway(ctx, addr, remoting.NewRequest(remoting.EndTransaction, remoting.EncodeHeader(&h), nil))
}

// checkTransaction is the producer's answer to a broker's check, registered with the client
// instance.
func (p *Producer) checkTransaction(ctx context.Context, rec *message.Record, h *protocol.CheckTransactionStateRequestHeader) int32 {
	props := message.UnmarshalProperties(rec.Properties)
	m := &CheckedMessage{Topic: p.userTopic(string(rec.Topic)), Body: rec.Body, Tags: props[message.PropertyTags],
		Properties: props, MsgID: h.MsgID, TransactionID: h.TransactionID}
	if keys := props[message.PropertyKeys]; keys != "" {
		m.Keys = strings.Fields(keys)
	}
	if m.MsgID == "" {
		m.MsgID = props[message.PropertyUniqKey]
	}
	return p.cfg.txListener.CheckLocalTransaction(ctx, m).sysFlag()
}
