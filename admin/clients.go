package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mqgo/mq/remoting"
)

// What the tools ask about clients: a producer group's connections, as RocketMQ's mqadmin
// producerConnection and the dashboard's producer view ask.

// ErrNoConnection is the error of ProducerConnection when no broker of the topic knows the
// group: RocketMQ's "Not found the producer group connection".
var ErrNoConnection = errors.New("admin: not found the producer group connection")

// ProducerConnection returns the connections of a producer group (GET_PRODUCER_CONNECTION_LIST)
// as the first master of topic's route that knows the group has them (RocketMQ asks one broker
// of the route at random; asking in order finds the group on any broker it registered with),
// sorted by client id.
func (a *Admin) ProducerConnection(ctx context.Context, group, topic string) ([]Connection, error) {
	what := "producer connection of group " + group
	ms, err := a.routeMasters(ctx, topic, what)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, m := range ms {
		req := remoting.NewRequest(remoting.GetProducerConnectionList, map[string]string{"producerGroup": group}, nil)
		resp, err := a.invokeOK(ctx, m.addr, req)
		if err != nil {
			// A broker the group never registered with answers SYSTEM_ERROR "not exist".
			lastErr = fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
			continue
		}
		var body struct {
			ConnectionSet []Connection `json:"connectionSet"`
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil {
			return nil, fmt.Errorf("admin: %s on broker %s: %w", what, m.addr, err)
		}
		if len(body.ConnectionSet) == 0 {
			continue
		}
		slices.SortFunc(body.ConnectionSet, func(x, y Connection) int { return strings.Compare(x.ClientID, y.ClientID) })
		return body.ConnectionSet, nil
	}
	if lastErr != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoConnection, lastErr)
	}
	return nil, ErrNoConnection
}
