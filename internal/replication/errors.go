package replication

import "errors"

// Sentinel errors. Callers use errors.Is.
var (
	// ErrNoSlave is returned by Master.WaitForAck when no slave is connected, or when every
	// connected slave is more than MasterOptions.SlaveFallBehindMax behind the offset waited
	// for. The broker answers SLAVE_NOT_AVAILABLE.
	ErrNoSlave = errors.New("replication: no slave available")
	// ErrSlaveTimeout is returned by Master.WaitForAck when no slave acknowledged the offset
	// within MasterOptions.SyncFlushTimeout. The broker answers FLUSH_SLAVE_TIMEOUT.
	ErrSlaveTimeout = errors.New("replication: flush slave timeout")
	// ErrProtocol marks a malformed or unexpected HA message (a block at the wrong offset, a
	// size out of bounds, a slave reporting an offset its master cannot serve or did not send
	// it). The connection that carried it is closed.
	ErrProtocol = errors.New("replication: protocol error")
	// ErrAuth marks a failed shared-secret handshake (MasterOptions.Secret,
	// SlaveOptions.Secret): no answer within HandshakeTimeout, or a wrong proof. The
	// connection is closed before any CommitLog byte crosses it.
	ErrAuth = errors.New("replication: HA authentication failed")
)
