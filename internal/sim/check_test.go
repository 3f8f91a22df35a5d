package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/producer"
)

func ackOf(q int, off int64) *producer.SendResult {
	return &producer.SendResult{Status: producer.SendOK, Queue: producer.MessageQueue{Topic: topic, QueueID: q}, QueueOffset: off}
}

func msgAt(q int, off int64) *consumer.Message {
	return &consumer.Message{Queue: consumer.MessageQueue{Topic: topic, QueueID: q}, QueueOffset: off}
}

// The history invariant: one message per offset of a queue, whoever saw it there; a power cut
// may erase what no producer was told was stored, and nothing else.
func TestHistoryInvariant(t *testing.T) {
	for _, c := range []struct {
		name      string
		powerLoss bool
		run       func(o *observations)
		want      []string // kinds broken
	}{
		{"one message seen by both", false, func(o *observations) {
			o.sendResult([]string{"a"}, ackOf(0, 5), nil)
			o.consumed(msgAt(0, 5), "a", true)
		}, nil},
		{"two acknowledged at one offset", true, func(o *observations) {
			o.sendResult([]string{"a"}, ackOf(0, 5), nil)
			o.sendResult([]string{"b"}, ackOf(0, 5), nil)
		}, []string{invHistory}},
		{"a batch overlapping a message", false, func(o *observations) {
			o.sendResult([]string{"a", "b", "c"}, ackOf(1, 7), nil)
			o.consumed(msgAt(1, 9), "d", true)
		}, []string{invHistory}},
		{"acknowledged, then another consumed there", true, func(o *observations) {
			o.sendResult([]string{"a"}, ackOf(0, 5), nil)
			o.consumed(msgAt(0, 5), "b", true)
		}, []string{invHistory}},
		{"unacknowledged replaced, no power cuts", false, func(o *observations) {
			o.consumed(msgAt(0, 5), "a", true)
			o.consumed(msgAt(0, 5), "b", true)
		}, []string{invHistory}},
		{"unacknowledged replaced after a power cut", true, func(o *observations) {
			o.consumed(msgAt(0, 5), "a", true)
			o.consumed(msgAt(0, 5), "b", true)
		}, nil},
		{"another queue, another offset", false, func(o *observations) {
			o.sendResult([]string{"a"}, ackOf(0, 5), nil)
			o.consumed(msgAt(1, 5), "b", true)
			o.consumed(msgAt(0, 6), "c", true)
		}, nil},
		{"retry topic offsets are not the topic's", false, func(o *observations) {
			o.sendResult([]string{"a"}, ackOf(0, 0), nil)
			m := msgAt(0, 0)
			m.Queue.Topic = "%RETRY%" + group
			o.consumed(m, "b", true)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newObservations(Config{PowerLoss: c.powerLoss}, newEventLog(""))
			c.run(o)
			var got []string
			for k := range o.kinds {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("broken %v, want %v; %v", got, c.want, o.violations)
			}
		})
	}
}

// Delivery counts successful consumptions only, and only of acknowledged messages.
func TestUndelivered(t *testing.T) {
	o := newObservations(Config{}, newEventLog(""))
	o.sendResult([]string{"a"}, ackOf(0, 0), nil)
	o.sendResult([]string{"b"}, ackOf(0, 1), nil)
	o.sendResult([]string{"c"}, &producer.SendResult{Status: producer.SendFlushDiskTimeout}, nil)
	o.consumed(msgAt(0, 0), "a", false) // asked again later
	o.consumed(msgAt(0, 1), "b", true)
	if got := o.undelivered(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("undelivered %v, want [a]", got)
	}
	o.consumed(msgAt(0, 0), "a", true)
	if got := o.undelivered(); len(got) != 0 {
		t.Fatalf("undelivered %v after a's success", got)
	}
}

// The offset invariants: a committed offset never past the queue's end (after a power cut, not
// until the end of the run), never lower than at the last check unless a fault came between
// or the master changed.
func TestOffsetInvariant(t *testing.T) {
	type step struct {
		row    offsetRow
		epoch  int
		master string
		final  bool
	}
	for _, c := range []struct {
		name      string
		powerLoss bool
		steps     []step
		want      []string
	}{
		{"rising within the data", false, []step{{offsetRow{queue: 0, offset: 3, maxOff: 5}, 1, "b0", false}, {offsetRow{queue: 0, offset: 5, maxOff: 9}, 1, "b0", false}}, nil},
		{"ahead of the data", false, []step{{offsetRow{queue: 0, offset: 6, maxOff: 5}, 1, "b0", false}}, []string{invAhead}},
		{"ahead after a power cut, mid-run", true, []step{{offsetRow{queue: 0, offset: 6, maxOff: 5}, 1, "b0", false}}, nil},
		{"ahead after a power cut, at the end", true, []step{{offsetRow{queue: 0, offset: 6, maxOff: 5}, 1, "b0", true}}, []string{invAhead}},
		{"back with no fault between", false, []step{{offsetRow{queue: 0, offset: 5, maxOff: 9}, 1, "b0", false}, {offsetRow{queue: 0, offset: 4, maxOff: 9}, 1, "b0", false}}, []string{invBack}},
		{"back across a fault", false, []step{{offsetRow{queue: 0, offset: 5, maxOff: 9}, 1, "b0", false}, {offsetRow{queue: 0, offset: 4, maxOff: 9}, 2, "b0", false}}, nil},
		{"back on a new master", false, []step{{offsetRow{queue: 0, offset: 5, maxOff: 9}, 1, "b0", false}, {offsetRow{queue: 0, offset: 4, maxOff: 9}, 1, "b1", false}}, nil},
		{"none committed", false, []step{{offsetRow{queue: 0, offset: -1, maxOff: 0}, 1, "b0", true}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newObservations(Config{PowerLoss: c.powerLoss}, newEventLog(""))
			w := &offsetWatch{last: map[int]offsetSample{}}
			for _, s := range c.steps {
				o.judgeOffset(w, s.row, s.epoch, s.master, s.final)
			}
			var got []string
			for k := range o.kinds {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("broken %v, want %v; %v", got, c.want, o.violations)
			}
		})
	}
}

// An offset violation's message tells when it was seen and whether the master's broker
// restarted since the last check: the two things a rare failure's report must carry.
func TestOffsetViolationContext(t *testing.T) {
	o := newObservations(Config{}, newEventLog(""))
	w := &offsetWatch{last: map[int]offsetSample{}}
	o.judgeOffset(w, offsetRow{queue: 0, offset: 5, maxOff: 9, broker: "0x1"}, 1, "b0", false)
	o.judgeOffset(w, offsetRow{queue: 0, offset: 4, maxOff: 3, broker: "0x2", state: "b0 log end 7"}, 1, "b0", false)
	if len(o.violations) != 2 {
		t.Fatalf("violations %v, want ahead and back", o.violations)
	}
	for _, v := range o.violations {
		for _, want := range []string{"mid-run", "the last check saw committed 5, queue end 9", "b0's broker restarted since", "b0 log end 7"} {
			if !strings.Contains(v, want) {
				t.Errorf("%q lacks %q", v, want)
			}
		}
	}
}

// A message only a consumer saw and an acknowledged one at the same offset: with fixed roles
// and power cuts, allowed exactly when a slave still holds the unacknowledged one there (it
// kept what the master's cut erased; seeds 327 and 443), in either order, and the acknowledged
// one is then not required delivered; otherwise, and in controller mode, two histories.
func TestHistoryDivergedSlave(t *testing.T) {
	for _, c := range []struct {
		name       string
		mode       Mode
		slaveHolds bool
		ackedFirst bool
		want       []string
	}{
		{"classic, the slave holds it", Classic, true, false, nil},
		{"classic, the slave holds it, seen after the acknowledgement", Classic, true, true, nil},
		{"classic, no slave holds it", Classic, false, false, []string{invHistory}},
		{"controller mode", Controlled, true, false, []string{invHistory}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := newObservations(Config{Mode: c.mode, PowerLoss: true}, newEventLog(""))
			if c.ackedFirst {
				o.sendResult([]string{"b"}, ackOf(0, 5), nil)
				o.consumed(msgAt(0, 5), "a", true)
			} else {
				o.consumed(msgAt(0, 5), "a", true)
				o.sendResult([]string{"b"}, ackOf(0, 5), nil)
			}
			o.consumed(msgAt(0, 5), "b", true)
			var asked []string
			o.judgeSuspects(func(p pos, key string) bool {
				asked = append(asked, fmt.Sprintf("%d/%d %s", p.queue, p.offset, key))
				return c.slaveHolds
			})
			var got []string
			for k := range o.kinds {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("broken %v, want %v; %v", got, c.want, o.violations)
			}
			if c.mode == Classic && !slices.Equal(asked, []string{"0/5 a"}) {
				t.Fatalf("asked the slaves about %v, want [0/5 a]", asked)
			}
			// b's offset went to the slave's a: b not delivered is not stuck then.
			if got := o.isShadowed("b"); got != (c.mode == Classic && c.slaveHolds) {
				t.Fatalf("b shadowed %v", got)
			}
		})
	}
}
