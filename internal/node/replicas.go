package node

import (
	"context"
	"fmt"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/remoting"
)

// replicasOptions are the node's settings of controller mode, for the replicas manager.
func (o Options) replicasOptions() ha.ReplicasOptions {
	cm := o.ControllerMode
	return ha.ReplicasOptions{ClusterName: o.Broker.ClusterName, BrokerName: o.Broker.Name, BrokerID: o.Broker.ID,
		StoreDir: o.Store.Dir, ControllerAddrs: cm.Addrs, MinInSyncReplicas: cm.MinInSyncReplicas,
		AllAckInSyncStateSet: cm.AllAckInSyncStateSet, ElectionPriority: cm.ElectionPriority,
		ControllerHeartbeatInterval: cm.HeartbeatInterval, SyncBrokerMetadataPeriod: cm.SyncBrokerMetadataPeriod,
		CheckSyncStateSetPeriod: cm.CheckSyncStateSetPeriod, HAMaxTimeSlaveNotCatchup: cm.HAMaxTimeSlaveNotCatchup,
		Logger: o.Logger}
}

// startReplicatedBroker starts the broker in controller mode: the replicas manager
// (internal/broker/ha) has the controllers decide its role before it opens for clients, and
// runs for as long as the node, restarting the broker (RestartBroker) when the role changes.
func (n *Node) startReplicatedBroker(ctx context.Context, bo broker.Options) error {
	r := ha.NewReplicas(n.opts.replicasOptions(), n.brokerTr, bo.BrokerAddr, n)
	n.replicas = r
	n.brokerTr.RegisterProcessor(remoting.NotifyBrokerRoleChanged, remoting.ProcessorFunc(r.OnNotify))
	jctx, cancel := context.WithTimeout(ctx, n.opts.StartTimeout)
	defer cancel()
	if err := r.Join(jctx); err != nil {
		return err
	}
	if err := r.PrepareStart(jctx, &bo); err != nil {
		return fmt.Errorf("mq: controller mode: %w", err)
	}
	if err := n.runBroker(ctx, bo, nil); err != nil {
		return err
	}
	if err := n.waitBroker(ctx); err != nil {
		return err
	}
	r.Started()
	n.g.Go(func() error { return r.Run(ctx) })
	return nil
}
