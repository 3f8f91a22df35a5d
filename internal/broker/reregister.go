package broker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/remoting"
)

// A broker that recovered from a crash answers GET_CONSUMER_LIST_BY_GROUP with SYSTEM_BUSY for
// Broker.ReregisterGrace (config.DefaultReregisterGrace; ours, RocketMQ answers at once).
//
// Why: a crash loses the consumer table and the offsets committed since the last
// FlushConsumerOffsetInterval. The members connected before it reconnect, persist their offsets
// and register again within a few hundred milliseconds; a member that asked for the list
// earlier would see only itself, take every queue and read offsets seconds old, delivering
// those seconds again. During the grace every member keeps the queues it holds (a busy answer
// skips a rebalance); when it ends, every member of every group is notified at once, so all
// rebalance with the whole group and the offsets its old owners wrote back.
//
// reregisterGrace is the broker's side of that window: until says when member lists are
// answered again (Unix ns; 0 when there is no window: a clean start).
type reregisterGrace struct {
	until atomic.Int64
}

// startReregisterGrace opens the window if the store did not close cleanly, and runs until it
// ends to notify every group; the caller runs it as one of the broker's services.
func (cm *clientManager) startReregisterGrace(ctx context.Context) error {
	if cm.store.RecoveryReport().Clean || cm.opts.Broker.ReregisterGrace < 0 {
		return nil
	}
	d := cm.opts.Broker.ReregisterGrace
	cm.regrace.until.Store(time.Now().Add(d).UnixNano())
	cm.log.Info().Int64("grace_ms", d.Milliseconds()).Msg("recovered from a crash: consumer lists wait for members to register again")
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	cm.regrace.until.Store(0)
	for _, c := range cm.consumers.AllGroups() {
		cm.notifyIfEnabled(c)
	}
	return nil
}

// inReregisterGrace reports whether member lists are held back now.
func (cm *clientManager) inReregisterGrace() bool {
	until := cm.regrace.until.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// reregisterBusy is the answer to a member list asked during the grace.
func reregisterBusy() *remoting.Command {
	return remoting.NewResponse(remoting.SystemBusy,
		"[REREGISTER]broker recovered from a crash, consumers are registering again, try later")
}
