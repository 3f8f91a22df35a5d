// Package locks is the queue locks of orderly consumers, a service of the broker's core
// (RocketMQ's RebalanceLockManager with the LOCK_BATCH_MQ and UNLOCK_BATCH_MQ its
// AdminBrokerProcessor serves): an orderly consumer locks the queues it took at each rebalance
// and renews them every 20 s, so that two members never consume one queue at once.
//
// What it owns: the lock table (Table, by group and queue, behind one leaf mutex), its two
// request codes, on the core's client pool as RocketMQ's, and one loop (Run) that forgets locks
// not renewed for Periods.RebalanceLockMaxLiveTime every ScanConnectionInterval, as the
// core's client housekeeping did. A lock survives its owner's connection: it only expires. The
// names a lock body carries are checked as it is decoded (reqnames.CheckLock).
//
// Files: service.go (the service and the two processors), table.go (the table).
package locks
