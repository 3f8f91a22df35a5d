package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// consumeResultNames are RocketMQ's CMResult values, in order: the official Go client answers
// the ordinal, the Java client the name.
var consumeResultNames = []string{"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}

// ConsumeDirectlyResult is a consumer's answer to CONSUME_MESSAGE_DIRECTLY (RocketMQ's
// ConsumeMessageDirectlyResult).
type ConsumeDirectlyResult struct {
	Order, AutoCommit bool
	// ConsumeResult is RocketMQ's CMResult name: CR_SUCCESS, CR_LATER, CR_THROW_EXCEPTION, ...
	ConsumeResult string
	Remark        string
	Spent         time.Duration
}

// ConsumeMessageDirectly asks one consumer of group (clientID, as ConsumerConnection lists
// it) to run its listener on the message an offset message id names, through the broker that
// stores it (CONSUME_MESSAGE_DIRECTLY, 309). The consumer commits nothing. As RocketMQ's admin
// does, it waits three times Options.Timeout: the listener runs before the answer.
func (a *Admin) ConsumeMessageDirectly(ctx context.Context, group, clientID, msgID string) (*ConsumeDirectlyResult, error) {
	host, _, err := message.ParseOffsetMsgID(msgID)
	if err != nil {
		return nil, fmt.Errorf("admin: consume %s directly: %w", msgID, err)
	}
	addr := host.String()
	ctx, cancel := context.WithTimeout(ctx, 3*a.opts.Timeout)
	defer cancel()
	req := remoting.NewRequest(remoting.ConsumeMessageDirectly, remoting.EncodeHeader(
		&protocol.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: group, ClientID: clientID, MsgID: msgID}), nil)
	if a.signer != nil {
		a.signer.Sign(req)
	}
	resp, err := a.transport.InvokeSync(ctx, addr, req)
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return nil, fmt.Errorf("admin: consume %s directly by %s of %s on broker %s: %w", msgID, clientID, group, addr, err)
	}
	var body struct {
		Order          bool            `json:"order"`
		AutoCommit     bool            `json:"autoCommit"`
		ConsumeResult  json.RawMessage `json:"consumeResult"`
		Remark         string          `json:"remark"`
		SpentTimeMills int64           `json:"spentTimeMills"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("admin: consume %s directly: answer unreadable: %w", msgID, err)
	}
	r := &ConsumeDirectlyResult{Order: body.Order, AutoCommit: body.AutoCommit, Remark: body.Remark,
		Spent: time.Duration(body.SpentTimeMills) * time.Millisecond}
	var name string
	var ordinal int
	switch {
	case json.Unmarshal(body.ConsumeResult, &name) == nil:
		r.ConsumeResult = name
	case json.Unmarshal(body.ConsumeResult, &ordinal) == nil && ordinal >= 0 && ordinal < len(consumeResultNames):
		r.ConsumeResult = consumeResultNames[ordinal]
	default:
		r.ConsumeResult = "UNKNOWN"
	}
	return r, nil
}
