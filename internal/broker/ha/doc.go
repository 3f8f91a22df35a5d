// Package ha is a broker's replication and the broker side of controller mode: RocketMQ's
// HAService glue and SlaveSynchronize, and RocketMQ 5's ReplicasManager.
//
// Service (New, attached by internal/broker/services) is one broker's part, built over the
// core after broker.New and installed as the core's broker.Replicator (Seams.SetReplicator):
//
//	ha.go              the internal/replication Master (masters) or Slave (slaves) over the
//	                   core's store; Start binds a master's HA listener before the core's first
//	                   REGISTER_BROKER, which advertises it; the SYNC_MASTER wait the core's send
//	                   path calls (WaitForSlave: FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE); a
//	                   slave learning its master from REGISTER_BROKER answers (Registered); the
//	                   HA writers woken by the core's dispatch hook
//	slave_sync.go      a slave's metadata sync every SlaveSyncPeriod (Run): topics, consumer
//	                   offsets and subscription groups installed through the core's checked
//	                   InstallMaster of its Topics, Offsets and Groups views, delay offsets
//	                   through DelayOffsets (the schedule's)
//	controller_mode.go a controller-mode master's epoch appended at open, a slave's adoption of
//	                   its master's epochs before it streams, the SyncStateSet a master
//	                   enforces (RefuseSend: MinInSyncReplicas; all-ack through the replication
//	                   master and the store's confirm offset), GET_BROKER_EPOCH_CACHE
//
// Replicas (NewReplicas, built by internal/node in controller mode) lives as long as the node,
// across the brokers it restarts:
//
//	replicas.go        registration with the controllers (broker id, brokerIdentity in the
//	                   store directory, apply, register, elect), heartbeats, replica info and
//	                   NOTIFY_BROKER_ROLE_CHANGED (a hint: the leader is asked), the SyncStateSet
//	                   check on a master, and the role change: the store cut where its history
//	                   parts from the new master's (GET_BROKER_EPOCH_CACHE, storage epochs), then
//	                   Restarter.RestartBroker, the node's swap of its broker on the same listener
//
// Files: the service keeps none of its own (the store keeps the epoch file); Replicas keeps
// brokerIdentity in the store directory.
//
// Goroutines: a master's listener and its per-slave reader and writer, or a slave's connection,
// run on the core's errgroup from Start; a slave's metadata sync is Run; the replicas manager's
// one loop is Replicas.Run on the node's errgroup. All end with their context.
//
// Locks: Service holds no mutex (atomics only) and calls the core, whose managers' locks are
// leaves. Replicas.mu guards the controllers' last view and this broker's id; it is never held
// while sending a request or restarting the broker.
package ha
