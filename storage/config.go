package storage

import "fmt"

// FlushDiskType says when an appended message counts as stored (RocketMQ
// org.apache.rocketmq.store.config.FlushDiskType). Its values are RocketMQ's spellings, so a
// setting reads the same in a RocketMQ broker.conf and here; "" means AsyncFlush.
type FlushDiskType string

// Flush modes.
const (
	// AsyncFlush, "ASYNC_FLUSH" and the default, acknowledges appends once they are in the page
	// cache; a flusher fsyncs every FlushIntervalCommitLog.
	AsyncFlush FlushDiskType = "ASYNC_FLUSH"
	// SyncFlush, "SYNC_FLUSH", acknowledges appends once fsynced, with group commit: many
	// appenders wait on one fsync.
	SyncFlush FlushDiskType = "SYNC_FLUSH"
)

// Check refuses a flush mode RocketMQ does not have; "" (the default) passes.
func (t FlushDiskType) Check() error {
	switch t {
	case "", AsyncFlush, SyncFlush:
		return nil
	}
	return fmt.Errorf("FlushDiskType %q is neither %s nor %s", string(t), AsyncFlush, SyncFlush)
}

// BrokerRole is a broker's part in its master/slave group (RocketMQ
// org.apache.rocketmq.store.config.BrokerRole), spelled as RocketMQ spells it; "" means
// DefaultRole of the broker id.
type BrokerRole string

// Broker roles.
const (
	// AsyncMaster, "ASYNC_MASTER" and the default for broker id 0, takes writes and acknowledges
	// them without waiting for a slave.
	AsyncMaster BrokerRole = "ASYNC_MASTER"
	// SyncMaster, "SYNC_MASTER", takes writes and acknowledges each once a slave has it.
	SyncMaster BrokerRole = "SYNC_MASTER"
	// Slave, "SLAVE" and the default for a broker id above 0, refuses writes, follows its
	// master's CommitLog and serves reads.
	Slave BrokerRole = "SLAVE"
)

// DefaultRole is the role of a broker that names none: RocketMQ's master id 0 is an
// ASYNC_MASTER, any other id a SLAVE.
func DefaultRole(brokerID int64) BrokerRole {
	if brokerID == 0 {
		return AsyncMaster
	}
	return Slave
}

// Check refuses a role that does not fit the broker id, as RocketMQ's BrokerStartup does: a
// master has id 0, a slave an id above 0. "" is refused too: resolve it with DefaultRole first.
func (r BrokerRole) Check(brokerID int64) error {
	switch r {
	case AsyncMaster, SyncMaster:
		if brokerID != 0 {
			return fmt.Errorf("a %s has BrokerID 0, not %d", r, brokerID)
		}
	case Slave:
		if brokerID <= 0 {
			return fmt.Errorf("a %s needs a BrokerID above 0, not %d", r, brokerID)
		}
	default:
		return fmt.Errorf("BrokerRole %q is not %s, %s or %s", string(r), AsyncMaster, SyncMaster, Slave)
	}
	return nil
}
