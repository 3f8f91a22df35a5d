package longpoll

import (
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/broker/filter"
	"github.com/mqgo/mq/internal/protocol"
)

func TestHeldPullSlots(t *testing.T) {
	header := func() *protocol.PullMessageRequestHeader {
		return &protocol.PullMessageRequestHeader{ConsumerGroup: "consumer_group", Topic: "TopicTest",
			MaxMsgNums: 32, SysFlag: protocol.PullFlagSuspend, SuspendTimeoutMillis: 20000,
			ExpressionType: protocol.ExpressionTag, BrokerName: "broker-a"}
	}
	honest := header()
	honest.SysFlag |= protocol.PullFlagSubscription
	honest.Subscription = "TagA || TagB || TagC"
	big := *honest
	big.Subscription = strings.Repeat("t||", 2000) // 6 KB, 2000 tags
	for _, c := range []struct {
		name   string
		h      *protocol.PullMessageRequestHeader
		sub    *filter.Subscription
		lo, hi int
	}{
		{"heartbeat subscription", header(), nil, 1, 1},
		// Its own compiled subscription makes it keep more than a KiB.
		{"header subscription", honest, filter.Parse(honest.Topic, honest.Subscription, honest.ExpressionType), 2, 2},
		{"2000 tags", &big, filter.Parse(big.Topic, big.Subscription, big.ExpressionType), 6 + 2000*tagBytes/SlotBytes, 1000},
	} {
		if got := Slots(c.h, c.sub); got < c.lo || got > c.hi {
			t.Errorf("%s: %d slots, want %d..%d", c.name, got, c.lo, c.hi)
		}
	}
}
