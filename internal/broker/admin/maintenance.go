package admin

import (
	"context"
	"slices"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
)

// The operators' clean-ups of RocketMQ 4.9's mqadmin cleanUnusedTopic and
// deleteExpiredCommitLog (CLEAN_UNUSED_TOPIC, DELETE_EXPIRED_COMMITLOG), which take no header
// and answer SUCCESS without a body, as AdminBrokerProcessor does.

// processCleanUnusedTopic handles CLEAN_UNUSED_TOPIC (316): the ConsumeQueues of topics the
// topic table no longer has are deleted (DefaultMessageStore.cleanUnusedTopic), the broker's
// own topics (SCHEDULE_TOPIC_XXXX and the other reserved ones, which RocketMQ keeps too)
// whatever the table says.
func (s *Service) processCleanUnusedTopic(_ context.Context, ch remoting.Channel, _ *remoting.Command) (*remoting.Command, error) {
	return s.cleanGoneTopics(ch, "unused topics cleaned"), nil
}

// cleanGoneTopics deletes the ConsumeQueues of topics the broker no longer has. A slave
// deletes nothing: its topic table is a copy that may lag its master's, and its queues follow
// the master's log.
func (s *Service) cleanGoneTopics(ch remoting.Channel, done string) *remoting.Command {
	if !s.core.IsMaster() {
		return remoting.NewResponse(remoting.Success, "a slave keeps its ConsumeQueues: its topic table follows its master's")
	}
	var gone []string
	for _, q := range s.core.Store().Queues() {
		if _, ok := s.core.Topics().Get(q.Topic); ok || names.Reserved(q.Topic) {
			continue
		}
		gone = append(gone, q.Topic)
	}
	slices.Sort(gone)
	gone = slices.Compact(gone)
	if len(gone) > 0 {
		if err := s.core.Store().DeleteTopics(gone...); err != nil {
			return remoting.NewResponse(remoting.SystemError, "delete consume queues: "+err.Error())
		}
	}
	s.log.Info().Int("topics", len(gone)).Strs("deleted", gone).Str("client", ch.RemoteAddr()).Msg(done)
	return remoting.NewResponse(remoting.Success, "")
}

// processDeleteExpiredCommitLog handles DELETE_EXPIRED_COMMITLOG (329): the store's next
// retention round deletes the CommitLog segments older than fileReservedTime whatever the hour
// (DefaultMessageStore.executeDeleteFilesManually, which RocketMQ keeps up for 20 rounds; one
// round here, which deletes up to deleteCommitLogFilesBatchMax segments).
func (s *Service) processDeleteExpiredCommitLog(_ context.Context, ch remoting.Channel, _ *remoting.Command) (*remoting.Command, error) {
	s.core.Store().ExecuteDeleteFilesManually()
	s.log.Warn().Str("client", ch.RemoteAddr()).Msg("expired commitlog deletion asked: the next retention round deletes them")
	return remoting.NewResponse(remoting.Success, ""), nil
}
