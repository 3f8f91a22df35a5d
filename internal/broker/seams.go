package broker

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// Seams are where a service plugs its implementation into the core's own paths: the
// Scheduler and Transactions (core_tx.go), the reply service's RequestNoter and the statistics'
// Counter (core_svc.go), the Replicator (core_ha.go) and the store's retention floor. A service
// sets its seam while it is built (after New, before Register and Run); the core reads them
// without a lock after. Each is nil until set, and nil means what RocketMQ does with the
// feature off. The unexported methods are the core's calls through them, each a no-op (or the
// feature-off answer) without the seam.
type Seams struct {
	sched    Scheduler
	tx       Transactions
	requests RequestNoter
	counter  Counter
	repl     Replicator
	// floor is the store's RetentionFloor, set by the service that owns pending records
	// (timers): the store asks it from its own goroutine at any time, so it is atomic.
	floor atomic.Pointer[func() int64]

	// What the Replicator's calls depend on, copied from Options by New.
	role           storage.BrokerRole
	controllerMode bool
}

// Seams are the broker's service seams.
func (b *Broker) Seams() *Seams { return &b.seams }

// SetScheduler installs the scheduled delivery of DELAY levels and timers.
func (s *Seams) SetScheduler(sc Scheduler) { s.sched = sc }

// SetTransactions installs the transactional message service.
func (s *Seams) SetTransactions(t Transactions) { s.tx = t }

// SetRequestNoter makes n see every plain send before its append.
func (s *Seams) SetRequestNoter(n RequestNoter) { s.requests = n }

// SetCounter makes c count every put and get.
func (s *Seams) SetCounter(c Counter) { s.counter = c }

// SetReplicator installs the broker's replication.
func (s *Seams) SetReplicator(r Replicator) { s.repl = r }

// SetRetentionFloor installs the store's retention floor: the store deletes no CommitLog
// segment holding an offset at or past f's answer (math.MaxInt64 when nothing is pending).
func (s *Seams) SetRetentionFloor(f func() int64) { s.floor.Store(&f) }

// Counter is the counter SetCounter set, nil without.
func (s *Seams) Counter() Counter { return s.counter }

// Replicator is what SetReplicator installed, or nil.
func (s *Seams) Replicator() Replicator { return s.repl }

// SlaveAcks are a master's connected slaves and what each acknowledged (metrics); nil on a
// slave or without HA.
func (s *Seams) SlaveAcks() []SlaveAck {
	if s.repl == nil {
		return nil
	}
	return s.repl.Slaves()
}

// retentionFloor is the store's RetentionFloor (storage.Options), math.MaxInt64 without one.
func (s *Seams) retentionFloor() int64 {
	if f := s.floor.Load(); f != nil {
		return (*f)()
	}
	return math.MaxInt64
}

// schedule applies m's DELAY level or timer properties through the Scheduler (see
// Scheduler.Schedule).
func (s *Seams) schedule(m *storage.Message) *remoting.Command {
	if s.sched == nil {
		return nil
	}
	return s.sched.Schedule(m)
}

// delay has m wait level's delay before it reaches its topic (the retry path).
func (s *Seams) delay(m *storage.Message, level int) {
	if s.sched != nil {
		s.sched.Delay(m, level)
	}
}

// prepareHalf turns a prepared send into a half message; false without Transactions, which
// the sender refuses as RejectTransactionMessage does.
func (s *Seams) prepareHalf(m *storage.Message) bool {
	if s.tx == nil {
		return false
	}
	s.tx.Prepare(m)
	return true
}

// afterPut tells the Scheduler a message it redirected was stored.
func (s *Seams) afterPut(m *storage.Message, r *storage.PutResult) {
	if s.sched != nil && putStored(r.Status) {
		s.sched.Stored(m)
	}
}

// recallHandle is the recall handle of m, a single message just stored: the Scheduler's when it
// made m a timer message (RocketMQ 5's attachRecallHandle), else "".
func (s *Seams) recallHandle(m *storage.Message) string {
	if s.sched == nil || m.Topic != names.TopicTimer {
		return ""
	}
	return s.sched.RecallHandle(m)
}

// noteRequest shows a plain send to the reply service.
func (s *Seams) noteRequest(ch remoting.Channel, props string) {
	if n := s.requests; n != nil {
		n.NoteRequest(ch, props)
	}
}

// countPut records n messages of size bytes stored in topic.
func (s *Seams) countPut(topic string, n, size int) {
	if c := s.counter; c != nil {
		c.CountPut(topic, n, size)
	}
}

// countGet records n messages of size bytes of topic returned to group.
func (s *Seams) countGet(topic, group string, n, size int) {
	if c := s.counter; c != nil {
		c.CountGet(topic, group, n, size)
	}
}

// forgetTopicCounters drops a deleted topic's counters.
func (s *Seams) forgetTopicCounters(topic string) {
	if c := s.counter; c != nil {
		c.ForgetTopic(topic)
	}
}

// startReplication starts the Replicator, if any (see Replicator.Start).
func (s *Seams) startReplication(ctx context.Context, run func(func() error)) error {
	if s.repl == nil {
		return nil
	}
	return s.repl.Start(ctx, run)
}

// haAddr is the Replicator's advertised HA address, "" without one.
func (s *Seams) haAddr() string {
	if s.repl == nil {
		return ""
	}
	return s.repl.Addr()
}

// waitForSlave makes a SYNC_MASTER's stored put wait for a slave (Replicator.WaitForSlave).
// Other roles, and puts not stored, return at once.
func (s *Seams) waitForSlave(ctx context.Context, r *storage.PutResult) {
	if s.role != storage.SyncMaster || s.repl == nil || !putStored(r.Status) {
		return
	}
	r.Status = s.repl.WaitForSlave(ctx, r.PhyOffset+int64(r.WroteBytes), r.Status)
}

// checkInSync refuses a send while controller mode's SyncStateSet is too small.
func (s *Seams) checkInSync() *remoting.Command {
	if !s.controllerMode || s.repl == nil {
		return nil
	}
	if remark := s.repl.RefuseSend(); remark != "" {
		return sendResponse(remoting.SystemError, remark)
	}
	return nil
}

// onRegistered hands a name server's REGISTER_BROKER answer to the Replicator.
func (s *Seams) onRegistered(res *route.RegisterBrokerResult) {
	if s.repl != nil && res != nil {
		s.repl.Registered(res)
	}
}
