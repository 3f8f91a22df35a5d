// Package replication is RocketMQ 4.x master/slave replication (HAService): a slave keeps a
// byte-for-byte copy of its master's CommitLog, and a sync master acknowledges a send only
// once a slave has it.
//
// # Protocol
//
// The HA protocol runs on its own TCP listener (haListenPort, by default the broker port + 1),
// not on the remoting transport. Integers are big-endian. The slave dials the master and sends
// offset reports; the master answers with blocks of CommitLog bytes.
//
// Slave -> master, offset report (at connect, after each block, at least every
// SendHeartbeatInterval); it is also the acknowledgement sync replication waits for:
//
//	+0   MAXPHYOFFSET   8   the slave's CommitLog end: it holds every byte below it
//
// Master -> slave, block (a heartbeat is a block with BODYSIZE 0, sent after
// SendHeartbeatInterval without data):
//
//	+0   PHYOFFSET      8   CommitLog offset of BODY's first byte
//	+8   BODYSIZE       4   B, at most TransferBatchBytes (haTransferBatchSize, 32 KiB)
//	+12  BODY           B   CommitLog bytes, blank records included; may end mid-record
//
// The master streams from the slave's first report onward; a block never spans two segments.
// The slave checks that PHYOFFSET equals its own log's end (anything else is ErrProtocol: it
// drops the connection and dials again, reporting its store's end), reads the whole body,
// and only then appends it with storage.Store.AppendRaw at the same offset, so a broken
// connection never leaves part of a block in the log. Either side drops a peer silent for
// HousekeepingInterval (haHousekeepingInterval, 20 s).
//
// # Types
//
// Master (NewMaster, Run) listens, serves each slave with two goroutines (report reader,
// block writer) and feeds their reports to the group-transfer core (transfer.go), which has
// no goroutines: WaitForAck queues a waiter for an offset, and one acknowledgement releases
// every waiter at or below it, like group commit. Slave (NewSlave, Run, SetMasterAddr) runs
// one connection at a time with two goroutines (block receiver, offset reporter) and
// reconnects after any break.
//
// # Lock order
//
//	Master.mu -> groupTransfer.mu are never held together; Slave.mu is a leaf.
//
// # Example
//
//	m, _ := replication.NewMaster(masterStore, replication.MasterOptions{ListenAddr: "127.0.0.1:10912"})
//	g.Go(func() error { return m.Run(ctx) })
//	s, _ := replication.NewSlave(slaveStore, replication.SlaveOptions{MasterAddr: "127.0.0.1:10912"})
//	g.Go(func() error { return s.Run(ctx) })
//	// on a SYNC_MASTER, after PutMessage:
//	err := m.WaitForAck(ctx, res.PhyOffset+int64(res.WroteBytes)) // ErrNoSlave, ErrSlaveTimeout
package replication
