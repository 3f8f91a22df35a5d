package schedule

import (
	"context"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
	"golang.org/x/sync/errgroup"
)

// Service is scheduled delivery: delay levels and timers. It is the core's Scheduler.
type Service struct {
	b     *broker.Broker
	delay *delayService
	timer *timerService
}

// New builds the service over b (reading delayOffset.json and the timer cursor) and installs
// it as b's Scheduler and the store's retention floor.
func New(b *broker.Broker) (*Service, error) {
	s := &Service{b: b, delay: newDelayService(b), timer: newTimerService(b)}
	b.Seams().SetScheduler(s)
	b.Seams().SetRetentionFloor(s.timer.retentionFloor)
	return s, nil
}

// Handlers: RECALL_MESSAGE (recall.go). GET_ALL_DELAY_OFFSET is the admin service's, which
// reads DelayOffsets.
func (s *Service) Handlers() []broker.Handler { return []broker.Handler{s.recallHandler()} }

// Run saves the delay cursors as they move and, on a master, delivers delayed and timer
// messages, until ctx ends. A slave keeps the cursors its master reports and delivers nothing:
// it cannot write.
func (s *Service) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.delay.runPersist(ctx, s.b.Options().Periods.FlushConsumerOffsetInterval) })
	if s.b.IsMaster() {
		g.Go(func() error { return s.delay.run(ctx) })
		g.Go(func() error { return s.timer.run(ctx) })
	}
	return g.Wait()
}

// Close writes delayOffset.json. The timer's cursor is a consumer offset the core saves.
func (s *Service) Close() error { return s.delay.persist() }

// Schedule moves m to SCHEDULE_TOPIC_XXXX for a DELAY level, else to the timer topic for a
// future timer time; a DELAY level wins, as in RocketMQ 5's HookUtils.handleScheduleMessage.
func (s *Service) Schedule(m *storage.Message) *remoting.Command {
	if level := message.DelayLevel(m.Properties); level > 0 {
		s.delay.toScheduleTopic(m, level)
		return nil
	}
	return s.timer.toTimerTopic(m)
}

// Delay moves m to wait level's delay (the retry path).
func (s *Service) Delay(m *storage.Message, level int) { s.delay.toScheduleTopic(m, level) }

// Stored wakes the delay levels' loop when m went to SCHEDULE_TOPIC_XXXX; the timer loop polls
// its queue every quarter precision.
func (s *Service) Stored(m *storage.Message) {
	if m.Topic == names.TopicSchedule {
		s.delay.notify()
	}
}

// DelayOffsets are the cursors of every configured level and of any other level the table
// holds.
func (s *Service) DelayOffsets() protocol.DelayOffsetSerializeWrapper { return s.delay.snapshot() }

// SetDelayOffsets installs a master's cursors and has them written now.
func (s *Service) SetDelayOffsets(w protocol.DelayOffsetSerializeWrapper) error {
	return s.delay.replace(w)
}

// TimerPending is how many timer messages are indexed and not yet delivered.
func (s *Service) TimerPending() int64 { return s.timer.pending.Load() }
