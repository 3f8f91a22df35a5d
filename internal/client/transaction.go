package client

import (
	"context"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// TransactionChecker answers a broker's CHECK_TRANSACTION_STATE for a half message of its
// producer group: the message record (under its real topic) and the check's header; it returns
// the transaction sysFlag type to end it with (message.TransactionCommitType,
// TransactionRollbackType, or TransactionNotType to leave it for the next check).
type TransactionChecker func(ctx context.Context, rec *message.Record, h *protocol.CheckTransactionStateRequestHeader) int32

// transactionCheckTimeout bounds one checker call: the broker asks again at its next check.
const transactionCheckTimeout = 30 * time.Second

// transactionCheckers are the producer groups of this instance that answer checks.
type transactionCheckers struct {
	mu sync.RWMutex
	m  map[string]TransactionChecker
}

// RegisterTransactionChecker makes the instance answer the checks of group's half messages
// with f; nil removes it.
func (i *Instance) RegisterTransactionChecker(group string, f TransactionChecker) {
	i.txCheckers.mu.Lock()
	defer i.txCheckers.mu.Unlock()
	if f == nil {
		delete(i.txCheckers.m, group)
		return
	}
	if i.txCheckers.m == nil {
		i.txCheckers.m = make(map[string]TransactionChecker)
	}
	i.txCheckers.m[group] = f
}

// processCheckTransactionState answers CHECK_TRANSACTION_STATE (39, one-way, as RocketMQ's
// ClientRemotingProcessor.checkTransactionState): the checker of the message's PGROUP decides,
// and END_TRANSACTION goes back to the broker that asked, with fromTransactionCheck set. A
// message of a group without a checker here is left alone (another producer of the group may
// answer).
func (i *Instance) processCheckTransactionState(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CheckTransactionStateRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		i.log.Warn().Err(err).Msg("CHECK_TRANSACTION_STATE with a bad header")
		return nil, nil
	}
	var rec message.Record
	if _, err := message.DecodeRecord(req.Body, &rec, false); err != nil {
		i.log.Warn().Err(err).Msg("CHECK_TRANSACTION_STATE with a bad message")
		return nil, nil
	}
	group, _ := message.PropertyValue(rec.Properties, message.PropertyProducerGroup)
	i.txCheckers.mu.RLock()
	check := i.txCheckers.m[string(group)]
	i.txCheckers.mu.RUnlock()
	if check == nil {
		i.log.Debug().Str("group", string(group)).Msg("transaction check for a group without a checker here")
		return nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, transactionCheckTimeout)
	state := check(cctx, &rec, &h)
	cancel()
	uniq, _ := message.PropertyValue(rec.Properties, message.PropertyUniqKey)
	msgID := h.MsgID
	if msgID == "" {
		msgID = string(uniq)
	}
	end := protocol.EndTransactionRequestHeader{ProducerGroup: string(group), TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset: h.CommitLogOffset, CommitOrRollback: state, FromTransactionCheck: true, MsgID: msgID,
		TransactionID: h.TransactionID}
	octx, ocancel := context.WithTimeout(context.Background(), DefaultHeartbeatTimeout)
	defer ocancel()
	if err := i.tr.InvokeOneway(octx, ch.RemoteAddr(), remoting.NewRequest(remoting.EndTransaction, remoting.EncodeHeader(&end), nil)); err != nil {
		i.log.Warn().Err(err).Str("group", string(group)).Msg("END_TRANSACTION after a check not sent")
	}
	return nil, nil
}
