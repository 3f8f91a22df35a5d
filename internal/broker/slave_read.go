package broker

import (
	"encoding/binary"

	"github.com/mqgo/mq/storage"
)

// suggestBroker is the suggestWhichBrokerId of a pull answer (RocketMQ PullMessageProcessor):
// with slave reading enabled, the group's whichBrokerWhenConsumeSlowly when the reader is far
// behind, else the group's broker id; without it, the master.
func (b *Broker) suggestBroker(r *storage.GetResult, cfg SubscriptionGroupConfig) int64 {
	if !b.opts.HA.SlaveReadEnable {
		return masterID
	}
	if b.farBehind(r) {
		return cfg.WhichBrokerWhenConsumeSlowly
	}
	return cfg.BrokerID
}

// recordPhyOffset is where a stored record keeps its own CommitLog offset (§9.1: TOTALSIZE,
// MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, then PHYSICALOFFSET).
const recordPhyOffset = 4 + 4 + 4 + 4 + 4 + 8

// farBehind reports whether a pull read data likely out of memory: the store's
// accessMessageInMemoryMaxRatio test, or AccessMessageInMemoryMaxBytes when set.
func (b *Broker) farBehind(r *storage.GetResult) bool {
	limit := b.opts.AccessMessageInMemoryMaxBytes
	if limit <= 0 {
		return r.SuggestPullingFromSlave
	}
	if len(r.Messages) == 0 {
		return false
	}
	last := r.Messages[len(r.Messages)-1]
	if len(last) < recordPhyOffset+8 {
		return false
	}
	phy := int64(binary.BigEndian.Uint64(last[recordPhyOffset:]))
	return b.store.MaxPhyOffset()-phy > limit
}
