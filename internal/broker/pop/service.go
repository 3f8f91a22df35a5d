package pop

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// reviveQueueNum is the revive topic's queue count (BrokerConfig.reviveQueueNum).
const reviveQueueNum = config.DefaultPopReviveQueueNum

// queueStripes is how many locks serialize pops of one (group, topic, queue): RocketMQ's
// QueueLockManager, striped so that the table of locks is bounded.
const queueStripes = 256

// ckKey names a checkpoint as an ack's receipt handle names it.
type ckKey struct {
	group, topic string // topic is where the messages were read: the topic or its pop retry topic
	queueID      int32
	start        int64 // the offset the pop read from (ExtraInfo.CkQueueOffset)
	popTime      int64
}

// checkpoint is one pop of one queue not yet finished: acked is a bitmap over offsets.
type checkpoint struct {
	key       ckKey
	reviveQid int32
	invisible int64 // ms
	offsets   []int64
	acked     uint32
	recOffset int64 // the ck record's offset in its revive queue
	// Buffer merge (buffer.go): unwritten is the acked bits whose ack record is not written
	// yet; dirty says c is in Service.dirty, since dirtyAt (ms).
	unwritten uint32
	dirty     bool
	dirtyAt   int64
}

func (c *checkpoint) deadline() int64 { return c.key.popTime + c.invisible }

func (c *checkpoint) index(offset int64) int {
	for i, o := range c.offsets {
		if o == offset {
			return i
		}
	}
	return -1
}

func (c *checkpoint) done() bool { return c.acked == 1<<len(c.offsets)-1 }

// Service is the POP service. mu guards cks, the checkpoints' acked, unwritten and dirty
// fields, dirty and buffered; reviveMu[q] is held shared by every writer of a ck record to
// revive queue q from before the write until its checkpoint is in cks, and exclusively by the
// revive loop while it picks the queue's revive offset, so the offset never passes a ck record
// whose checkpoint is not yet in the table.
type Service struct {
	b           *broker.Broker
	cfg         config.Pop
	log         zerolog.Logger
	reviveTopic string
	brokerName  string

	mu  sync.Mutex
	cks map[ckKey]*checkpoint
	// buffered: acks are merged in memory and written by flushAcks (buffer.go); dirty is the
	// checkpoints with acks not yet written, in the order their first one came.
	buffered bool
	dirty    []*checkpoint

	reviveMu   [reviveQueueNum]sync.RWMutex
	queueLocks [queueStripes]sync.Mutex
	seed       maphash.Seed
	nextQid    atomic.Uint32

	polls  *polls
	orders *orders
}

// New builds the service over b and replays the revive topic (a slave serves no pops).
func New(b *broker.Broker) (*Service, error) {
	cfg := b.Options().Pop
	cfg.EnsureDefaults()
	s := &Service{
		b:           b,
		cfg:         cfg,
		log:         b.Logger().With().Str("component", "pop").Str("broker", b.Options().Broker.Name).Logger(),
		reviveTopic: reviveTopicPrefix + b.Options().Broker.ClusterName,
		brokerName:  b.Options().Broker.Name,
		cks:         map[ckKey]*checkpoint{},
		seed:        maphash.MakeSeed(),
	}
	s.polls = newPolls(s)
	o := b.Options()
	s.buffered = !cfg.DisableBufferMerge && o.Store.FlushDiskType != storage.SyncFlush && o.Broker.Role == storage.AsyncMaster
	if b.IsMaster() {
		b.Topics().AddSystem(s.reviveTopic, reviveQueueNum)
		if err := s.replay(); err != nil {
			return nil, err
		}
		if err := s.loadOrders(); err != nil {
			return nil, err
		}
	}
	b.Hooks().OnDispatch(s.onDispatch)
	b.Hooks().OnConnClose(s.polls.dropChannel)
	return s, nil
}

// Handlers serve the POP codes: pops and peeks on the pull pool, as RocketMQ runs its
// PopMessageProcessor; acks and changes on the pull pool too (acks that never wait on the
// transport's goroutine, see ackInline and batchAckInline), and the queries on the admin pool.
func (s *Service) Handlers() []broker.Handler {
	tg := []reqnames.Field{reqnames.TopicField("topic"), reqnames.GroupField("consumerGroup")}
	pools := s.b.Pools()
	h := func(code int32, names []reqnames.Field, f remoting.ProcessorFunc, pool *remoting.Executor) broker.Handler {
		return broker.Handler{Code: code, Names: names, Proc: f, Pool: pool}
	}
	return []broker.Handler{
		h(remoting.PopMessage, tg, s.processPop, pools.Pull),
		h(remoting.PeekMessage, tg, s.processPeek, pools.Pull),
		{Code: remoting.AckMessage, Names: tg, Proc: remoting.ProcessorFunc(s.processAck), Pool: pools.Pull, Inline: s.ackInline},
		{Code: remoting.BatchAckMessage, Proc: remoting.ProcessorFunc(s.processBatchAck), Pool: pools.Pull, Inline: s.batchAckInline},
		h(remoting.ChangeMessageInvisibleTime, tg, s.processChangeInvisible, pools.Pull),
		h(remoting.Notification, tg, s.processNotification, pools.Pull),
		h(remoting.PollingInfo, tg, s.processPollingInfo, pools.Admin),
	}
}

// Run runs the revive loop on a master until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	defer s.polls.close()
	if !s.b.IsMaster() {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.cfg.ReviveInterval)
	defer t.Stop()
	// Merged acks are written once they waited half the stay time, at the tick after: none
	// waits a whole stay time.
	var flush <-chan time.Time
	if s.buffered {
		ft := time.NewTicker(max(s.cfg.CkStayBufferTime/2, time.Millisecond))
		defer ft.Stop()
		flush = ft.C
	}
	for {
		select {
		case <-ctx.Done():
			s.flushAcks(nowMillis(), 0)
			return nil
		case <-t.C:
			s.revive(nowMillis())
		case <-flush:
			s.flushAcks(nowMillis(), max(s.cfg.CkStayBufferTime.Milliseconds()/2, 1))
		}
	}
}

// Close drops the parked pops (Run's end did too, when it ran) and writes the acks merged in
// memory; acks that come later are written before they are answered. The checkpoints are
// records of the revive topic and the offsets the core's, so nothing else is written.
func (s *Service) Close() error {
	s.polls.close()
	s.mu.Lock()
	s.buffered = false
	s.mu.Unlock()
	s.flushAcks(nowMillis(), 0)
	return nil
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// queueLock is the lock of one (group, topic, queue)'s pops.
func (s *Service) queueLock(group, topic string, qid int32) *sync.Mutex {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(group)
	h.WriteByte(0)
	h.WriteString(topic)
	h.WriteByte(byte(qid))
	h.WriteByte(byte(qid >> 8))
	return &s.queueLocks[h.Sum64()%queueStripes]
}

// refuse is an answer with code and a remark.
func refuse(code int32, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(code, fmt.Sprintf(format, args...))
}

// readableTopic checks the topic and queue a POP request names, as PopMessageProcessor
// checks them; qid -1 stands for every queue when anyQueue.
func (s *Service) readableTopic(ch remoting.Channel, topic string, qid int32, anyQueue bool) (route.TopicConfig, *remoting.Command) {
	tc, ok := s.b.Topics().Get(topic)
	if !ok {
		return tc, refuse(remoting.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if !route.IsReadable(tc.Perm) {
		return tc, refuse(remoting.NoPermission, "the topic[%s] peeking message is forbidden", topic)
	}
	if (qid == -1 && anyQueue) || (qid >= 0 && qid < tc.ReadQueueNums) {
		return tc, nil
	}
	return tc, refuse(remoting.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d] consumer:[%s]",
		qid, topic, tc.ReadQueueNums, ch.RemoteAddr())
}

// consumableGroup checks the group as PopMessageProcessor does.
func (s *Service) consumableGroup(group string) (broker.SubscriptionGroupConfig, *remoting.Command) {
	cfg, err := s.b.Groups().Lookup(group)
	if err != nil {
		return cfg, refuse(remoting.SubscriptionGroupNotExist, "%s",
			broker.GroupRemark(err, "subscription group ["+group+"] does not exist"))
	}
	if !cfg.ConsumeEnable {
		return cfg, refuse(remoting.NoPermission, "subscription group no permission, %s", group)
	}
	return cfg, nil
}

// masterOnly refuses a POP request on a slave, which keeps no checkpoints.
func (s *Service) masterOnly() *remoting.Command {
	if s.b.IsMaster() {
		return nil
	}
	return refuse(remoting.NoPermission, "the broker[%s] pop message is forbidden: it is a slave", s.brokerName)
}

// checkInvisible refuses an invisible time out of (0, MaxInvisibleTime].
func (s *Service) checkInvisible(ms int64) *remoting.Command {
	if ms <= 0 || ms > s.cfg.MaxInvisibleTime.Milliseconds() {
		return refuse(remoting.InvalidParameter, "invisibleTime %d ms is out of range: it must be in (0, %d] ms",
			ms, s.cfg.MaxInvisibleTime.Milliseconds())
	}
	return nil
}

// addCheckpoint records c: its ck record goes to the revive topic, then commit runs (the pop
// moves its offset), then c joins the table, all under reviveMu[c.reviveQid] shared.
func (s *Service) addCheckpoint(c *checkpoint, commit func()) error {
	s.reviveMu[c.reviveQid].RLock()
	defer s.reviveMu[c.reviveQid].RUnlock()
	off, err := s.putRecord(c.reviveQid, ckTag, c.record(s.brokerName))
	if err != nil {
		return err
	}
	c.recOffset = off
	if commit != nil {
		commit()
	}
	s.mu.Lock()
	// A later checkpoint under the same key (a change of one message twice in one
	// millisecond) replaces the earlier: the message keeps the later deadline.
	s.cks[c.key] = c
	s.mu.Unlock()
	return nil
}

// full reports whether the checkpoint table is at its cap.
func (s *Service) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cks) >= s.cfg.CkMaxBufferSize
}

// Checkpoints is the number of live checkpoints (for tests and statistics).
func (s *Service) Checkpoints() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cks)
}
