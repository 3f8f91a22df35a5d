package probes

import "github.com/mqgo/mq/consumer"

// SplitStable reports whether the consumers' assignments of topic are disjoint and cover all
// of its queues: a group's rebalance has settled.
func SplitStable(pcs []*consumer.PushConsumer, topic string, queues int) bool {
	held := map[consumer.MessageQueue]int{}
	for _, pc := range pcs {
		for _, q := range pc.Assignment() {
			if q.Topic == topic {
				held[q]++
			}
		}
	}
	if len(held) != queues {
		return false
	}
	for _, n := range held {
		if n != 1 {
			return false
		}
	}
	return true
}
