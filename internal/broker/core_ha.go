package broker

import (
	"context"
	"crypto/tls"
	"time"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// What the core needs of replication and controller mode, which live in internal/broker/ha:
// the HA connection settings the node resolves and the Replicator seam (set with
// Seams.SetReplicator, called through seams.go). The checked installs of a master's tables on
// a slave are the table views' InstallMaster (view_tables.go).

// HAConn is what the node resolves at start about replication's connections, beside the HA
// group it declares: where a master is advertised, the handshake's bound and the TLS configs
// HA.TLS stands for. Zero values mean plaintext and internal/replication's defaults.
type HAConn struct {
	// AdvertisedIP is the host a master advertises its HA listener under (RocketMQ brokerIP2,
	// which defaults to brokerIP1); empty means the listener's own host (config.AdvertisedAddr).
	AdvertisedIP string
	// HandshakeTimeout bounds the shared-secret and TLS handshakes,
	// replication.DefaultHandshakeTimeout (3 s).
	HandshakeTimeout time.Duration
	// MasterTLS makes a master's HA listener speak TLS; SlaveTLS makes a slave dial its master
	// with TLS. RocketMQ's HA connection is plaintext.
	MasterTLS *tls.Config
	SlaveTLS  *tls.Config
}

// Role is the broker's role.
func (b *Broker) Role() storage.BrokerRole { return b.opts.Broker.Role }

// A Replicator is the broker's replication, as the core sees it (internal/broker/ha builds
// it, RocketMQ's HAService with the ReplicasManager's per-broker state). Without one the
// broker replicates nothing: no HA address goes out, a SYNC_MASTER answers as soon as the put
// is stored, and no send waits for in-sync replicas.
type Replicator interface {
	// Start starts the replication master or slave on run (the broker's errgroup) before the
	// broker's first REGISTER_BROKER, which carries the master's HA address: a master returns
	// once its listener is bound or ctx ended.
	Start(ctx context.Context, run func(func() error)) error
	// Addr is the HA address REGISTER_BROKER advertises: a master's bound listener, else "".
	Addr() string
	// WaitForSlave runs a SYNC_MASTER's group transfer after a put stored up to end, the
	// CommitLog offset past its last byte, and returns the put status RocketMQ answers: status
	// itself once a slave has the bytes, else FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE. (Values,
	// not the *PutResult: a pointer through an interface call would move every send's result to
	// the heap.)
	WaitForSlave(ctx context.Context, end int64, status storage.PutStatus) storage.PutStatus
	// Registered applies a name server's REGISTER_BROKER answer (a slave learns its master).
	Registered(res *route.RegisterBrokerResult)
	// RefuseSend is the remark of the SYSTEM_ERROR refusing a send of a master in controller
	// mode whose SyncStateSet is smaller than MinInSyncReplicas, else "".
	RefuseSend() string
	// Slaves lists a master's connected slaves with their acknowledgements (nil on a slave).
	Slaves() []SlaveAck
}

// SlaveAck is a connected slave's latest acknowledgement.
type SlaveAck struct {
	Addr      string
	BrokerID  int64 // the id it named (controller mode), else 0
	AckOffset int64
}
