package rebalance

import "slices"

// ByConfig returns RocketMQ's AllocateMessageQueueByConfig ("CONFIG"): the client takes the
// queues it was configured with, whatever the other members do. Each member is configured on
// its own, so nothing stops two members from being given the same queue: keeping the
// configurations disjoint and complete is the operator's job.
//
// ByConfig keeps a sorted copy of queues with duplicates removed; the caller may reuse its
// slice. It differs from RocketMQ, which returns the configured list unconditionally, in two
// ways that follow the Strategy contract:
//
//   - a client that is not in clientIDs (or has an empty id) takes nothing;
//   - only configured queues that are among Allocate's queues are returned, so a queue of
//     another topic, or one the route no longer lists, is never pulled.
func ByConfig(queues []MessageQueue) Strategy {
	c := sortedQueues(queues)
	return byConfig{queues: slices.Compact(c)}
}

type byConfig struct {
	queues []MessageQueue // sorted, no duplicates; never modified after construction
}

func (byConfig) Name() string { return NameByConfig }

func (s byConfig) Allocate(_, currentClientID string, queues []MessageQueue, clientIDs []string) []MessageQueue {
	if len(queues) == 0 || !member(currentClientID, clientIDs) {
		return nil
	}
	present := make(map[MessageQueue]struct{}, len(queues))
	for _, q := range queues {
		present[q] = struct{}{}
	}
	var out []MessageQueue
	for _, q := range s.queues {
		if _, ok := present[q]; ok {
			out = append(out, q)
		}
	}
	return out
}
