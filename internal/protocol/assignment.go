package protocol

import (
	"encoding/json"
	"fmt"

	"github.com/mqgo/mq/rebalance"
)

// Bodies of RocketMQ 5's assignment requests (docs/protocol.md, "Assignment and request
// modes"): QUERY_ASSIGNMENT (400), SET_MESSAGE_REQUEST_MODE (401) and
// GET_ALL_MESSAGE_REQUEST_MODE (402). None has a custom header.

// Message models of QueryAssignmentRequestBody (MessageModel).
const (
	MessageModelClustering   = "CLUSTERING"
	MessageModelBroadcasting = "BROADCASTING"
)

// QueryAssignmentRequestBody is QUERY_ASSIGNMENT's body: which queues of topic the broker
// assigns to clientID, a member of consumerGroup, under the named allocation strategy
// (rebalance.NameAveragely or rebalance.NameAveragelyByCircle).
type QueryAssignmentRequestBody struct {
	Topic         string `json:"topic"`
	ConsumerGroup string `json:"consumerGroup"`
	ClientID      string `json:"clientId"`
	StrategyName  string `json:"strategyName"`
	MessageModel  string `json:"messageModel"`
}

// MessageQueueAssignment is one assigned queue and how to read it (MessageQueueAssignment). A
// queue id of -1 in POP mode means every queue of the broker.
type MessageQueueAssignment struct {
	MessageQueue rebalance.MessageQueue `json:"messageQueue"`
	Mode         string                 `json:"mode"`
	Attachments  map[string]string      `json:"attachments,omitempty"`
}

// QueryAssignmentResponseBody is QUERY_ASSIGNMENT's answer. Nil assignments (the key left
// out, as Java leaves out a null set) tell the client to keep what it has; an empty list to
// drop every queue.
type QueryAssignmentResponseBody struct {
	MessageQueueAssignments []MessageQueueAssignment `json:"messageQueueAssignments,omitempty"`
}

// MarshalJSON writes an empty, non-nil list as [] and a nil one not at all.
func (b QueryAssignmentResponseBody) MarshalJSON() ([]byte, error) {
	if b.MessageQueueAssignments == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(struct {
		A []MessageQueueAssignment `json:"messageQueueAssignments"`
	}{b.MessageQueueAssignments})
}

// SetMessageRequestModeRequestBody is SET_MESSAGE_REQUEST_MODE's body, and one entry of the
// persisted mode table: how consumerGroup reads topic (config.MessageRequestModePull or
// MessageRequestModePop) and, in POP mode, how many following members' queues each member
// also pops.
type SetMessageRequestModeRequestBody struct {
	Topic            string `json:"topic"`
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int    `json:"popShareQueueNum"`
}

// MessageRequestModeSerializeWrapper is GET_ALL_MESSAGE_REQUEST_MODE's answer and the form of
// messageRequestMode.json: topic -> group -> mode.
type MessageRequestModeSerializeWrapper struct {
	MessageRequestModeMap map[string]map[string]SetMessageRequestModeRequestBody `json:"messageRequestModeMap"`
}

// DecodeJSONBody decodes a request's JSON body into v, refusing an empty one.
func DecodeJSONBody(what string, body []byte, v any) error {
	if len(body) == 0 {
		return fmt.Errorf("%s: no body", what)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: malformed body: %v", what, err)
	}
	return nil
}
