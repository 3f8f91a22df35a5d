package protocol

// HARuntimeInfo is the body answering GET_BROKER_HA_STATUS (907), RocketMQ 5's HARuntimeInfo
// (mqadmin haStatus): a master's CommitLog end and its slaves, or a slave's connection.
type HARuntimeInfo struct {
	Master                   bool                      `json:"master"`
	MasterCommitLogMaxOffset int64                     `json:"masterCommitLogMaxOffset"`
	InSyncSlaveNums          int                       `json:"inSyncSlaveNums"`
	HAConnectionInfo         []HAConnectionRuntimeInfo `json:"haConnectionInfo"`
	HAClientRuntimeInfo      HAClientRuntimeInfo       `json:"haClientRuntimeInfo"`
}

// HAConnectionRuntimeInfo is one slave connection of a master.
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
