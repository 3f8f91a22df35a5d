package consumer

import (
	"time"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/protocol"
)

// RunningInfo describes the held queues for GET_CONSUMER_RUNNING_INFO (307), as RocketMQ's
// ProcessQueue.fillProcessQueueInfo does, and the rates of each topic (stats.go). The last
// consume time is not kept and stays 0.
func (p *puller) RunningInfo() client.ConsumerRunning {
	run := client.ConsumerRunning{Queues: map[protocol.MessageQueue]protocol.ProcessQueueInfo{}}
	if pc, ok := p.svc.(*PushConsumer); ok {
		run.Orderly = pc.cfg.orderly
		run.ConsumeGoroutines = pc.cfg.consumeGoroutines
	}
	if !p.isStarted() {
		return run
	}
	run.Status = p.stats.table(time.Now())
	for _, qs := range p.states() {
		info := qs.pq.info()
		info.CommitOffset = -1 // RocketMQ's answer for a queue without an offset
		if off, ok := p.store.read(qs.mq); ok {
			info.CommitOffset = off
		}
		run.Queues[qs.mq] = info
	}
	return run
}

// info is the queue's cache and lock state, the offset left to the caller.
func (pq *processQueue) info() protocol.ProcessQueueInfo {
	var info protocol.ProcessQueueInfo
	pq.mu.Lock()
	if n := len(pq.mu.offsets); n > 0 {
		info.CachedMsgMinOffset, info.CachedMsgMaxOffset = pq.mu.offsets[0], pq.mu.offsets[n-1]
		info.CachedMsgCount = int32(n)
	}
	info.CachedMsgSizeInMiB = int32(pq.mu.bytes >> 20)
	for off := range pq.mu.consuming {
		if info.TransactionMsgCount == 0 || off < info.TransactionMsgMinOffset {
			info.TransactionMsgMinOffset = off
		}
		info.TransactionMsgMaxOffset = max(info.TransactionMsgMaxOffset, off)
		info.TransactionMsgCount++
	}
	pq.mu.Unlock()
	info.Locked = pq.locked.Load()
	if ns := pq.lastLockTime.Load(); ns > 0 {
		info.LastLockTimestamp = ns / 1e6
	}
	info.Droped = pq.isDropped()
	info.LastPullTimestamp = pq.lastPullTime.Load() / 1e6
	return info
}
