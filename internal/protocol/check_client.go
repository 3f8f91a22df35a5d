package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CheckClientRequestBody is the body of CHECK_CLIENT_CONFIG (46), which has no header: a
// consumer asks one broker of a topic whether it can serve a subscription that is not a tag
// expression (RocketMQ sends it at start for every such subscription and gives up starting
// on any answer but SUCCESS).
type CheckClientRequestBody struct {
	ClientID         string           `json:"clientId"`
	Group            string           `json:"group"`
	SubscriptionData SubscriptionData `json:"subscriptionData"`
}

// Encode returns the JSON body. SQL92 expressions are written as they are ("a > 1", not
// "a \u003e 1"), as Java clients write them.
func (b *CheckClientRequestBody) Encode() []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		panic(err) // only strings, numbers and bools: cannot fail
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

// DecodeCheckClientRequestBody parses a CHECK_CLIENT_CONFIG body.
func DecodeCheckClientRequestBody(body []byte) (*CheckClientRequestBody, error) {
	var b CheckClientRequestBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("protocol: check client body: %w", err)
	}
	return &b, nil
}
