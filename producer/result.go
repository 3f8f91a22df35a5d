package producer

import (
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Step 6 of a send (send.go): the broker's answer to one attempt.

// result reads a send response (docs/protocol.md §4.1) to an attempt on q of the message with
// client id msgID: the four success codes, else a *remoting.ResponseError. Attempts is left to
// the retry policy, which counts them.
func result(resp *remoting.Command, q MessageQueue, msgID string) (*SendResult, error) {
	var st SendStatus
	switch resp.Code {
	case remoting.Success:
		st = SendOK
	case remoting.FlushDiskTimeout:
		st = SendFlushDiskTimeout
	case remoting.FlushSlaveTimeout:
		st = SendFlushSlaveTimeout
	case remoting.SlaveNotAvailable:
		st = SendSlaveNotAvailable
	default:
		return nil, &remoting.ResponseError{Code: resp.Code, Remark: resp.Remark}
	}
	var h protocol.SendMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	q.QueueID = int(h.QueueID)
	return &SendResult{Status: st, MsgID: msgID, OffsetMsgID: h.MsgID, Queue: q, QueueOffset: h.QueueOffset,
		RegionID: h.MsgRegion, TransactionID: h.TransactionID, TraceOn: h.TraceOn}, nil
}
