package admin

import (
	"context"
	"fmt"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// The brokers' clean-ups mqadmin cleanUnusedTopic, deleteExpiredCommitLog and deleteSubGroup
// -r ask for.

// CleanUnusedTopic has a broker delete the ConsumeQueues of topics its topic table no longer
// has (CLEAN_UNUSED_TOPIC).
func (a *Admin) CleanUnusedTopic(ctx context.Context, brokerAddr string) error {
	if _, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.CleanUnusedTopic, nil, nil)); err != nil {
		return fmt.Errorf("admin: clean unused topics on %s: %w", brokerAddr, err)
	}
	return nil
}

// DeleteExpiredCommitLog has a broker's next retention round delete its expired CommitLog
// segments whatever the hour (DELETE_EXPIRED_COMMITLOG).
func (a *Admin) DeleteExpiredCommitLog(ctx context.Context, brokerAddr string) error {
	if _, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.DeleteExpiredCommitLog, nil, nil)); err != nil {
		return fmt.Errorf("admin: delete expired commitlog on %s: %w", brokerAddr, err)
	}
	return nil
}

// RemoveSubscriptionGroup deletes a consumer group's settings from one broker
// (DELETE_SUBSCRIPTIONGROUP) and, with removeOffset, its committed offsets there too
// (RocketMQ 4.9.3's removeOffset; older brokers ignore it).
func (a *Admin) RemoveSubscriptionGroup(ctx context.Context, brokerAddr, group string, removeOffset bool) error {
	req := remoting.NewRequest(remoting.DeleteSubscriptionGroup, remoting.EncodeHeader(
		&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: group, RemoveOffset: removeOffset}), nil)
	if _, err := a.invokeOK(ctx, brokerAddr, req); err != nil {
		return fmt.Errorf("admin: delete subscription group %s on broker %s: %w", group, brokerAddr, err)
	}
	return nil
}
