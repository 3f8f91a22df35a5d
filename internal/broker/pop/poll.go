package pop

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

type parkResult int

const (
	notParked parkResult = iota // answer now: polling not possible (closing)
	parked
	pollFull // POLLING_FULL: the caps are reached
)

// parkedReq is a pop or notification waiting for a message: it is listed under its topic and
// its group's pop retry topic, and answered once, by whoever takes it first (a dispatch of
// either topic, its timer, or Close, which drops it).
type parkedReq struct {
	ch     remoting.Channel
	req    *remoting.Command
	h      protocol.PopMessageRequestHeader
	notify bool
	keys   [2]string
	timer  *time.Timer
	until  time.Time // when its poll time ends
	size   int       // what it holds, counted against maxParkedBytes
}

// maxParkedBytes bounds what the parked requests hold in all (their names and expressions): the
// budget of the parked pulls (65,536 slots of 1 KiB), so a flood of pops with 64 KiB
// expressions cannot hold more memory than one of pulls.
const maxParkedBytes = 64 << 20

// parkedOverhead is what a parked request costs besides its strings.
const parkedOverhead = 512

// polls are the parked requests (RocketMQ's PopLongPollingService), capped by
// maxPopPollingSize in all and popPollingSize per topic.
type polls struct {
	s      *Service
	mu     sync.Mutex
	byKey  map[string]map[*parkedReq]struct{}
	total  int
	bytes  int
	closed bool
	n      atomic.Int64 // total, for the dispatch hook's lock-free look
	wg     sync.WaitGroup
}

func newPolls(s *Service) *polls {
	return &polls{s: s, byKey: map[string]map[*parkedReq]struct{}{}}
}

// pollWait is how long a request asking pollTime ms may be parked: never past the broker's
// long-poll suspend cap, computed below the cap so that it cannot overflow.
func (s *Service) pollWait(pollTime int64) time.Duration {
	limit := s.b.Options().Limits.MaxLongPollingSuspend
	if limit > 0 && pollTime >= limit.Milliseconds() {
		return limit
	}
	return time.Duration(max(pollTime, 0)) * time.Millisecond
}

// park holds a request for wait until a message for it arrives. It keeps the header, not the
// request's fields or body: the held command is req's code, opaque and serialization only.
func (p *polls) park(ch remoting.Channel, req *remoting.Command, h *protocol.PopMessageRequestHeader, notify bool, wait time.Duration) parkResult {
	if wait <= 0 {
		return notParked
	}
	pr := &parkedReq{ch: ch, h: *h, notify: notify, until: time.Now().Add(wait),
		req:  &remoting.Command{Code: req.Code, Language: req.Language, Version: req.Version, Opaque: req.Opaque, Serialize: req.Serialize},
		keys: [2]string{h.Topic, protocol.PopRetryTopicV1(h.Topic, h.ConsumerGroup)},
		size: parkedOverhead + len(h.Topic) + len(h.ConsumerGroup) + len(h.Exp) + len(h.ExpType) + len(h.AttemptID) + len(h.BrokerName)}
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return notParked
	case p.total >= p.s.cfg.MaxPollingSize || len(p.byKey[h.Topic]) >= p.s.cfg.PollingSize || p.bytes+pr.size > maxParkedBytes:
		p.mu.Unlock()
		return pollFull
	}
	for _, k := range pr.keys {
		m := p.byKey[k]
		if m == nil {
			m = map[*parkedReq]struct{}{}
			p.byKey[k] = m
		}
		m[pr] = struct{}{}
	}
	p.total++
	p.bytes += pr.size
	p.n.Store(int64(p.total))
	pr.timer = time.AfterFunc(wait, func() { p.fire(pr) })
	p.mu.Unlock()
	// A message stored between the read and the park found nothing to wake: look again.
	if ch.Closed() || p.s.hasMessage(h.ConsumerGroup, h.Topic, h.QueueID) {
		p.fire(pr)
	}
	return parked
}

// takeLocked removes pr from the table; false when someone took it first.
func (p *polls) takeLocked(pr *parkedReq) bool {
	if _, ok := p.byKey[pr.keys[0]][pr]; !ok {
		return false
	}
	for _, k := range pr.keys {
		delete(p.byKey[k], pr)
		if len(p.byKey[k]) == 0 {
			delete(p.byKey, k)
		}
	}
	p.total--
	p.bytes -= pr.size
	p.n.Store(int64(p.total))
	pr.timer.Stop()
	return true
}

// fire answers pr if nobody did.
func (p *polls) fire(pr *parkedReq) {
	p.mu.Lock()
	ok := !p.closed && p.takeLocked(pr)
	if ok {
		p.wg.Add(1)
	}
	p.mu.Unlock()
	if ok {
		go func() {
			defer p.wg.Done()
			p.s.answerParked(pr)
		}()
	}
}

// wake answers, of the requests parked on topic, one per consumer group (PopLongPollingService
// wakes one per key): a woken pop that finds nothing parks again for the rest of its time. It
// is the dispatch hook's, so it never blocks on more than the table's lock.
func (p *polls) wake(topic string) {
	if p.n.Load() == 0 {
		return
	}
	p.mu.Lock()
	var woken []*parkedReq
	if !p.closed {
		var groups map[string]bool
		for pr := range p.byKey[topic] {
			if groups[pr.h.ConsumerGroup] {
				continue
			}
			if groups == nil {
				groups = map[string]bool{}
			}
			groups[pr.h.ConsumerGroup] = true
			woken = append(woken, pr)
		}
	}
	for _, pr := range woken {
		p.takeLocked(pr)
	}
	p.wg.Add(len(woken))
	p.mu.Unlock()
	for _, pr := range woken {
		go func() {
			defer p.wg.Done()
			p.s.answerParked(pr)
		}()
	}
}

// dropChannel forgets the requests of a closed connection.
func (p *polls) dropChannel(ch remoting.Channel) {
	if p.n.Load() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var gone []*parkedReq
	for _, m := range p.byKey {
		for pr := range m {
			if pr.ch == ch {
				gone = append(gone, pr)
			}
		}
	}
	for _, pr := range gone {
		p.takeLocked(pr)
	}
}

// count is the number of requests of group parked on topic's queue qid.
func (p *polls) count(topic, group string, qid int32) int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int32
	for pr := range p.byKey[topic] {
		if pr.h.ConsumerGroup == group && pr.h.QueueID == qid {
			n++
		}
	}
	return n
}

// close drops every parked request and waits for the answers under way.
func (p *polls) close() {
	p.mu.Lock()
	p.closed = true
	for _, m := range p.byKey {
		for pr := range m {
			p.takeLocked(pr)
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// answerParked answers a taken request: a pop runs again and a notification looks again; one
// that finds nothing parks again for the rest of its poll time, and answers once that ran out.
func (s *Service) answerParked(pr *parkedReq) {
	if pr.ch.Closed() {
		return
	}
	var resp *remoting.Command
	if pr.notify {
		has := s.hasMessage(pr.h.ConsumerGroup, pr.h.Topic, pr.h.QueueID)
		if !has && s.polls.park(pr.ch, pr.req, &pr.h, true, time.Until(pr.until)) == parked {
			return
		}
		resp = notificationResponse(has, false)
	} else if resp = s.pop(pr.ch, pr.req, &pr.h, time.Until(pr.until)); resp == nil {
		return
	}
	resp.Opaque = pr.req.Opaque
	resp.Serialize = pr.req.Serialize
	_ = pr.ch.WriteResponse(resp) // only a closed channel fails: nobody to tell
}

// onDispatch wakes the requests parked on a stored message's topic.
func (s *Service) onDispatch(e storage.DispatchEvent) { s.polls.wake(e.Topic) }

// hasMessage reports whether the group has a message past its pop offset in queue qid of
// topic (every queue when -1) or in its pop retry topic.
func (s *Service) hasMessage(group, topic string, qid int32) bool {
	st := s.b.Store()
	has := func(t string, q int32) bool {
		return st.MaxOffsetInQueue(t, q) > s.popOffset(group, t, q, protocol.PopInitModeMax)
	}
	if rt, ok := s.b.Topics().Get(protocol.PopRetryTopicV1(topic, group)); ok {
		for q := range s.b.Topics().QueueLoopBound(rt.ReadQueueNums) {
			if has(rt.TopicName, q) {
				return true
			}
		}
	}
	if qid >= 0 {
		return has(topic, qid)
	}
	tc, ok := s.b.Topics().Get(topic)
	if !ok {
		return false
	}
	for q := range s.b.Topics().QueueLoopBound(tc.ReadQueueNums) {
		if has(topic, q) {
			return true
		}
	}
	return false
}

func notificationResponse(hasMsg, pollingFull bool) *remoting.Command {
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = make(map[string]string, 2)
	(&protocol.NotificationResponseHeader{HasMsg: hasMsg, PollingFull: pollingFull}).Encode(resp.ExtFields)
	return resp
}

// processNotification serves NOTIFICATION: whether the group has a message to pop, waiting up
// to pollTime for one.
func (s *Service) processNotification(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.NotificationRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if refused := s.masterOnly(); refused != nil {
		return refused, nil
	}
	if timeoutTooMuch(nowMillis(), h.BornTime, h.PollTime) {
		return refuse(remoting.PollingTimeout, "the broker[%s] pop message is timeout too much", s.brokerName), nil
	}
	if _, refused := s.readableTopic(ch, h.Topic, h.QueueID, true); refused != nil {
		return refused, nil
	}
	if _, refused := s.consumableGroup(h.ConsumerGroup); refused != nil {
		return refused, nil
	}
	if s.hasMessage(h.ConsumerGroup, h.Topic, h.QueueID) {
		return notificationResponse(true, false), nil
	}
	if h.PollTime <= 0 {
		return notificationResponse(false, false), nil
	}
	ph := protocol.PopMessageRequestHeader{ConsumerGroup: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID,
		PollTime: h.PollTime, BornTime: h.BornTime}
	switch s.polls.park(ch, req, &ph, true, s.pollWait(h.PollTime)) {
	case parked:
		return nil, nil
	case pollFull:
		return notificationResponse(false, true), nil
	}
	return notificationResponse(false, false), nil
}

// processPollingInfo serves POLLING_INFO: the group's pops parked on the queue.
func (s *Service) processPollingInfo(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.PollingInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if _, refused := s.readableTopic(ch, h.Topic, h.QueueID, true); refused != nil {
		return refused, nil
	}
	if _, refused := s.consumableGroup(h.ConsumerGroup); refused != nil {
		return refused, nil
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = make(map[string]string, 1)
	(&protocol.PollingInfoResponseHeader{PollingNum: s.polls.count(h.Topic, h.ConsumerGroup, h.QueueID)}).Encode(resp.ExtFields)
	return resp, nil
}
