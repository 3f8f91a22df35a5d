// Package sim is a seeded simulation of a whole broker group under faults (issue 32): a seed
// decides a cluster (RocketMQ 4's master and slave, or RocketMQ 5's controller mode with three
// controllers and two or three brokers), its settings (flush mode, replication role), a
// workload (producers and a consumer group) and a schedule of faults over simulated minutes:
// process crashes and power cuts with restarts, partitions, isolated and paused nodes, slow and
// failing disks (fsync errors, write errors, short writes, a full disk) and clock jumps. While
// it runs and once the faults are over it checks the invariants: every acknowledged message is
// delivered (or, to tell why not, found in the surviving master's store), the queues keep one
// history across failovers (no two messages at one offset; with fixed roles a slave may keep
// what its master's power cut erased, as RocketMQ 4's HA leaves it, so a consumer's message
// that a slave still holds at the offset is allowed, and the acknowledged one it stands in
// for is not required delivered), the group's committed offsets are
// never ahead of the data nor go back without a fault between (a consumer that was paused, cut
// off or left alone commits the queues it held until its next rebalance, as RocketMQ's do, so an
// action touching a consumer counts as a fault for consumerSettle), replicas hold their master's log,
// the healed cluster takes sends again, and nothing is left running after Close.
//
// # How it runs
//
// Each seed runs in a testing/synctest bubble: a fake clock that moves only when every
// goroutine of the bubble waits, so simulated minutes take seconds. Nothing in the bubble may
// wait on a socket (it never blocks durably, so the clock would stall): nodes start with
// node.StartSim (no listener, reached through this process's table of local nodes), clients
// use node.LocalTransport, and HA replication and the controllers' Raft run over
// internal/memnet, an in-memory network whose waits the bubble sees. Faults between parties go
// through internal/faults (mqtest's injector), which every transport and HA and Raft dialer of
// the simulation joins.
//
// A broker's disk is its directory under internal/storagehook (disk.go): its mapped files are
// mapped copy-on-write, so the file holds only what a sync wrote back, as a disk holds only what
// an fsync made durable. A kill stops the world first (synctest.Wait: every other goroutine
// parked), takes the disk as a process crash leaves it (the mappings written back: the page
// cache survives) or as a power cut does (only what was synced), cuts the node off so that
// nothing it does afterwards reaches anyone, closes it and puts the image in place of its
// directory. Power cuts happen only where an acknowledged message must survive one (SYNC_FLUSH
// with fixed roles); elsewhere kills are process crashes.
//
// # Determinism
//
// Randomness comes only from the seed (math/rand/v2's PCG): the configuration, the schedule
// (drawn whole before the run), each producer's choices, each disk's fault decisions (drawn
// per file, so goroutine order does not matter) and the listener's retries (a hash of the
// message's key). The event log records the seed's configuration, every action of the schedule
// at its scheduled time and the verdict; its digest is the same on every run of the seed, and
// TestSim with -sim.seed runs a seed twice and compares. What the cluster does in between is
// not reproduced step by step: Go's scheduler, select and hashicorp/raft's election timeouts
// are random, so counts (messages sent, acknowledged) vary a little between runs of one seed;
// they are notes in the log ("~"), left out of the digest.
//
// # What is not simulated
//
// A power cut loses what a mapped file was not synced; writes outside mappings (metadata files,
// the checkpoint) count as durable once written, and a failed fsync writes nothing back while a
// later one writes everything (Linux may drop the pages of a failed writeback). Clock jumps
// move the stores' clocks (store timestamps, the index, retention); the rest of a node reads Go's
// clock, which the bubble moves forward only. The name servers' and controllers' disks are
// copied at a kill as a process crash leaves them (bbolt syncs every commit), with no faults of
// their own. One broker group; gRPC, ACL, TLS and the cluster secret are off.
package sim
