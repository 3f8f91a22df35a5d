package node

import (
	"context"
	"fmt"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/ha"
	"github.com/mqgo/mq/remoting"
)

// Defaults of controller mode, RocketMQ 5's BrokerConfig and MessageStoreConfig values (the
// replicas manager's, internal/broker/ha).
const (
	DefaultControllerHeartbeatInterval = ha.DefaultControllerHeartbeatInterval
	DefaultSyncBrokerMetadataPeriod    = ha.DefaultSyncBrokerMetadataPeriod
	DefaultCheckSyncStateSetPeriod     = ha.DefaultCheckSyncStateSetPeriod
	DefaultHAMaxTimeSlaveNotCatchup    = ha.DefaultHAMaxTimeSlaveNotCatchup
	DefaultMinInSyncReplicas           = ha.DefaultMinInSyncReplicas
)

// replicasOptions are the node's settings of controller mode, for the replicas manager.
func (o Options) replicasOptions() ha.ReplicasOptions {
	return ha.ReplicasOptions{ClusterName: o.ClusterName, BrokerName: o.BrokerName, BrokerID: o.BrokerID,
		StoreDir: o.StoreDir, ControllerAddrs: o.ControllerAddrs, MinInSyncReplicas: o.MinInSyncReplicas,
		AllAckInSyncStateSet: o.AllAckInSyncStateSet, ElectionPriority: o.ElectionPriority,
		ControllerHeartbeatInterval: o.ControllerHeartbeatInterval, SyncBrokerMetadataPeriod: o.SyncBrokerMetadataPeriod,
		CheckSyncStateSetPeriod: o.CheckSyncStateSetPeriod, HAMaxTimeSlaveNotCatchup: o.HAMaxTimeSlaveNotCatchup,
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
	if err := n.runBroker(ctx, bo); err != nil {
		return err
	}
	if err := n.waitBroker(ctx); err != nil {
		return err
	}
	r.Started()
	n.g.Go(func() error { return r.Run(ctx) })
	return nil
}
