package admin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// HARuntimeInfo is a broker's replication state (GET_BROKER_HA_STATUS): a master's CommitLog end
// and connected slaves, or a slave's connection to its master.
type HARuntimeInfo = protocol.HARuntimeInfo

// HAStatus asks one broker for its replication state (RocketMQ 5's getBrokerHAStatus).
func (a *Admin) HAStatus(ctx context.Context, brokerAddr string) (*HARuntimeInfo, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.GetBrokerHAStatus, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("admin: HA status of %s: %w", brokerAddr, err)
	}
	var info HARuntimeInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		return nil, fmt.Errorf("admin: HA status of %s: %w", brokerAddr, err)
	}
	return &info, nil
}
