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
// # Acknowledgement
//
// Reports are claims by a peer the master cannot see into, so the master takes them only
// within what it can know:
//
//   - The first report must lie within the master's log [MinPhyOffset, MaxPhyOffset], else
//     the peer is closed (it cannot be served).
//   - Every later report must be at most what the master has handed that connection (its
//     first report, then each block's end): a slave holds only what it received. A report
//     past that (and so any report past the master's end, such as MaxInt64) is ErrProtocol:
//     the peer is closed, logged at a rate-limited Error, and the report acknowledges nothing.
//   - A report lower than the previous one is legal (RocketMQ accepts it): it is the slave's
//     truth now and lowers its standing for later waiters.
//   - The acknowledgement WaitForAck goes by is the highest latest report among the slaves
//     connected now, not the highest ever seen (RocketMQ's push2SlaveMaxOffset): when a slave
//     leaves, its reports stop counting, and with no slave WaitForAck answers ErrNoSlave even
//     for an offset a departed slave had acknowledged. A waiter already released stays
//     released: a connected slave held its bytes when it was told.
//
// Without a secret the first report is unverifiable: any peer that reaches the HA port can
// read the whole CommitLog and, by reporting what it was sent, acknowledge sync sends it did
// not store. Keep the port on a trusted network, or set a secret.
//
// # Authentication
//
// With MasterOptions.Secret set, the master runs this handshake on every connection before
// RocketMQ's protocol starts; SlaveOptions.Secret must hold the same secret. Without a secret
// neither side sends these bytes, so a RocketMQ slave can follow an mq master and the reverse.
//
//	master -> slave   MASTERNONCE   32   random (crypto/rand), sent at accept
//	slave -> master   SLAVENONCE    32   random
//	                  SLAVEPROOF    32   HMAC-SHA256(secret, "mq-ha-slave-v1" | MASTERNONCE | SLAVENONCE)
//	master -> slave   MASTERPROOF   32   HMAC-SHA256(secret, "mq-ha-master-v1" | MASTERNONCE | SLAVENONCE)
//
// then the slave's first offset report. The master compares SLAVEPROOF in constant time
// (hmac.Equal); the whole exchange must end within HandshakeTimeout (3 s) from accept, so a
// peer that trickles bytes is cut at the same deadline. A peer that answers wrongly, late or
// not at all (a RocketMQ slave sends its 8-byte report instead) is closed having received
// MASTERNONCE and nothing else. The slave checks MASTERPROOF the same way and drops a master
// that cannot prove the secret before it reports or appends anything, so an impostor cannot
// feed it a log. The labels keep one side's proof from serving as the other's; fresh nonces
// on both sides keep an old exchange from being replayed. The secret authenticates the peers
// at connect; it does not encrypt the stream or protect it from an attacker on the path
// (use a private network or a tunnel for that), and it must be at least MinSecretBytes (16)
// long, since anyone who saw one exchange can test guesses offline.
//
// # Identity
//
// In controller mode (RocketMQ 5's SyncStateSet) the master must know which broker each slave
// is. With MasterOptions.RequireIdentity the slave sends, after the handshake (if any) and
// before its first report:
//
//	+0   MAGIC          4   "MQID"
//	+4   BROKERID       8   the slave's broker id, above 0
//
// within HandshakeTimeout; a peer that sends anything else is closed having received nothing.
// SetSyncStateSet then makes WaitForAck wait for every member of the set (allAckInSyncStateSet):
// the acknowledgement is the lowest, over the members, of the best report of a connection
// that named that id. RocketMQ 5 carries the same facts in its AutoSwitch HA handshake, which
// this is not.
//
// To a slave that named itself every block header, heartbeats included, is followed by the
// master's confirm offset (8 bytes; math.MaxInt64 unbounded), and the master sends a heartbeat
// as soon as the offset moves: the slave bounds what its consumers see by it, as the master
// does (Store.SetConfirmOffset), so a consumer never reads from a slave what a new master
// elected from the set may lack.
//
// # Types
//
// Master (NewMaster, Run) listens, serves each slave with two goroutines (report reader,
// block writer) and feeds their connects, reports and disconnects to the group-transfer core
// (transfer.go), which has no goroutines: WaitForAck queues a waiter for an offset, and one
// acknowledgement releases every waiter at or below it, like group commit. Slave (NewSlave, Run, SetMasterAddr) runs
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
