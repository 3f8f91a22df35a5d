package longpoll

import (
	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/protocol"
)

// SlotBytes is what one slot of the parked-pull caps stands for: a parked pull takes
// one slot per started KiB it keeps, so MaxHeldPulls (65,536 slots: 64 MiB) bounds the bytes
// parked pulls hold, not only their number. An honest pull, filtered by its group's heartbeat
// subscription, keeps a few hundred bytes and takes one slot.
const SlotBytes = 1 << 10

// What a parked pull keeps, besides the strings of its header (the core's
// TestParkedPullRetainsItsSlots measures it against what Slots charges): pullBaseBytes, the
// Pull with its request (no extension fields) and decoded header and its places in the hold's
// indexes; and for a subscription compiled from the pull's own header, subBaseBytes (the
// subscription with its tag and code maps), tagBytes a tag, and what a SQL92 expression
// compiles to (sql92.Expr.Size).
const (
	pullBaseBytes = 512
	subBaseBytes  = 768
	tagBytes      = 128
)

// Slots is the number of slots a parked pull with header h and subscription sub takes.
func Slots(h *protocol.PullMessageRequestHeader, sub *filter.Subscription) int {
	n := pullBaseBytes + len(h.ConsumerGroup) + len(h.Topic) + len(h.Subscription) + len(h.ExpressionType) +
		len(h.BrokerName)
	if h.HasSubscription() && sub != nil && !sub.Shared() {
		// Compiled from this header for this pull alone (a heartbeat's is shared, and so is
		// the "*" of pulls that carry it).
		expr, tags, compiled := sub.Size()
		n += subBaseBytes + expr + tagBytes*tags + compiled
	}
	return (n + SlotBytes - 1) / SlotBytes
}
