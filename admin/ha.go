package admin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mqgo/mq/remoting"
)

// HARuntimeInfo is a broker's replication state (GET_BROKER_HA_STATUS): a master's CommitLog end
// and connected slaves, or a slave's connection to its master (the JSON names are RocketMQ's).
type HARuntimeInfo struct {
	Master                   bool                      `json:"master"`
	MasterCommitLogMaxOffset int64                     `json:"masterCommitLogMaxOffset"`
	InSyncSlaveNums          int                       `json:"inSyncSlaveNums"`
	HAConnectionInfo         []HAConnectionRuntimeInfo `json:"haConnectionInfo"`
	HAClientRuntimeInfo      HAClientRuntimeInfo       `json:"haClientRuntimeInfo"`
}

// HAConnectionRuntimeInfo is one slave connected to a master.
type HAConnectionRuntimeInfo struct {
	Addr                    string `json:"addr"`
	SlaveAckOffset          int64  `json:"slaveAckOffset"`
	Diff                    int64  `json:"diff"`
	InSync                  bool   `json:"inSync"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
	TransferFromWhere       int64  `json:"transferFromWhere"`
}

// HAClientRuntimeInfo is a slave's connection to its master; the timestamps are unix ms.
type HAClientRuntimeInfo struct {
	MasterAddr              string `json:"masterAddr"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
	MaxOffset               int64  `json:"maxOffset"`
	LastReadTimestamp       int64  `json:"lastReadTimestamp"`
	LastWriteTimestamp      int64  `json:"lastWriteTimestamp"`
	MasterFlushOffset       int64  `json:"masterFlushOffset"`
}

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
