package rebalance

// Averagely returns RocketMQ's default strategy, AllocateMessageQueueAveragely ("AVG"). With q
// sorted queues and c sorted client ids, let size = q/c and extra = q%c. The client at
// position i takes one contiguous block of the sorted queues: the first extra clients take
// size+1 queues each, the rest size each, blocks following each other in client order. When
// there are more clients than queues, the first q clients take one queue each and the others
// nothing.
//
// The split is the one the official Go client's AllocateByAveragely and the Java client's
// AllocateMessageQueueAveragely compute (after they sort their inputs), so members running
// either client and members running ours share a group without taking a queue twice. Every
// queue goes to exactly one member, and shares differ by at most one.
func Averagely() Strategy { return averagely{} }

type averagely struct{}

func (averagely) Name() string { return NameAveragely }

func (averagely) Allocate(_, currentClientID string, queues []MessageQueue, clientIDs []string) []MessageQueue {
	qs, ids, index, ok := prepare(currentClientID, queues, clientIDs)
	if !ok {
		return nil
	}
	start, n := averageBlock(len(qs), len(ids), index)
	return result(qs[start : start+n])
}

// averageBlock returns where the block of the client at position index starts, and how
// long it is, when the given number of sorted queues is shared by the given number of
// sorted clients.
//
// RocketMQ writes the same arithmetic as: averageSize = 1 if queues <= clients, else
// size+1 for the first extra clients and size otherwise; startIndex = index*averageSize for
// the first extra clients and index*averageSize+extra otherwise; take
// min(averageSize, queues-startIndex) queues. For queues < clients that gives clients past
// the first `queues` a start beyond the end and a negative length, i.e. nothing; here size is
// 0 for them, giving start == queues and length 0, the same answer. Tests check the two forms
// agree for every small case.
func averageBlock(queues, clients, index int) (start, n int) {
	size, extra := queues/clients, queues%clients
	if index < extra {
		return index * (size + 1), size + 1
	}
	return index*size + extra, size
}

// AveragelyByCircle returns RocketMQ's AllocateMessageQueueAveragelyByCircle
// ("AVG_BY_CIRCLE"): the sorted queues are dealt out like cards, so with c sorted client ids
// the client at position i takes the queues at positions i, i+c, i+2c, … Every queue goes to
// exactly one member, and shares differ by at most one. It matches the official Go client's
// AllocateByAveragelyCircle.
func AveragelyByCircle() Strategy { return averagelyByCircle{} }

type averagelyByCircle struct{}

func (averagelyByCircle) Name() string { return NameAveragelyByCircle }

func (averagelyByCircle) Allocate(_, currentClientID string, queues []MessageQueue, clientIDs []string) []MessageQueue {
	qs, ids, index, ok := prepare(currentClientID, queues, clientIDs)
	if !ok {
		return nil
	}
	var out []MessageQueue
	for i := index; i < len(qs); i += len(ids) {
		out = append(out, qs[i])
	}
	return out
}
