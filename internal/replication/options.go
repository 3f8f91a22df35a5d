package replication

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/storage"
	"github.com/rs/zerolog"
)

// Defaults, as in RocketMQ's MessageStoreConfig and HAService. Those of the settings config.HA
// declares are config's (config.DefaultHATransferBatchBytes and the rest).
const (
	// DefaultListenAddr is the HA listener's address: any host, haListenPort 10912.
	DefaultListenAddr = ":10912"
	// DefaultSyncFlushTimeout is syncFlushTimeout: how long WaitForAck waits. RocketMQ has one
	// setting for this and for a sync flush's wait, so it is the store's.
	DefaultSyncFlushTimeout = storage.DefaultSyncFlushTimeout
	// DefaultHandshakeTimeout bounds the shared-secret handshake (no RocketMQ setting: it has
	// no handshake). It is RocketMQ's remoting connect timeout, 3 s: ample for a slave on a
	// LAN, and the longest a peer without the secret holds a connection.
	DefaultHandshakeTimeout = 3 * time.Second
	// DefaultMaxConnections caps the HA connections a master serves at once (no RocketMQ
	// setting: its HA port takes any number). A master has one or two slaves; the rest of the
	// room is for slaves reconnecting before the master noticed their old connection died.
	DefaultMaxConnections = 16
)

// MinSecretBytes is the shortest HA secret accepted: the handshake's proofs can be attacked
// offline by anyone who saw one exchange, so a short secret would be guessed.
const MinSecretBytes = 16

// MasterOptions configures a Master. The zero value of every field means the default.
type MasterOptions struct {
	// ListenAddr is the HA listener's host:port (haListenPort; RocketMQ listens on the broker
	// port + 1), default ":10912". Port 0 picks a free port; see Master.Addr.
	ListenAddr string
	// TransferBatchBytes is haTransferBatchSize, the most CommitLog bytes per block, 32 KiB.
	// At most MaxBlockBytes.
	TransferBatchBytes int
	// HousekeepingInterval is haHousekeepingInterval: a slave that sends no report for this
	// long is disconnected, and a write that blocks this long fails, 20 s.
	HousekeepingInterval time.Duration
	// SendHeartbeatInterval is haSendHeartbeatInterval: with nothing to send for this long,
	// the master sends an empty block so the slave knows it is alive, 5 s.
	SendHeartbeatInterval time.Duration
	// SlaveFallBehindMax is haSlaveFallbehindMax in bytes, 256 MiB: WaitForAck answers
	// ErrNoSlave when the best slave acknowledgement is further behind than this.
	SlaveFallBehindMax int64
	// SyncFlushTimeout is syncFlushTimeout, how long WaitForAck waits for a slave, 5 s.
	SyncFlushTimeout time.Duration
	// TransferWaitInterval is how often a writer with nothing to send checks the log's end
	// when Notify is not called, 100 ms.
	TransferWaitInterval time.Duration
	// Secret, when not empty (at least MinSecretBytes), makes every peer prove it knows it
	// before anything else crosses the connection (doc.go, Authentication); a peer that does
	// not gets nothing and is closed. Empty keeps RocketMQ's protocol, which any peer that
	// reaches the HA port can follow. NewMaster keeps a copy.
	Secret []byte
	// HandshakeTimeout bounds the whole handshake when Secret is set, and the TLS handshake,
	// 3 s.
	HandshakeTimeout time.Duration
	// TLSConfig, when set, makes the HA listener speak TLS with its certificate (slaves then
	// need SlaveOptions.TLSConfig). RocketMQ's HA connection is always plaintext.
	TLSConfig *tls.Config
	// MaxConnections caps the connections served at once, 16: each holds a goroutine for up
	// to HandshakeTimeout (with a Secret) or HousekeepingInterval before it proves anything.
	// A connection beyond it is closed as soon as it is accepted.
	MaxConnections int
	// RequireIdentity makes every slave name its broker id first (doc.go, Identity), as
	// controller mode needs to tell the members of a SyncStateSet apart; slaves then need
	// SlaveOptions.BrokerID. RocketMQ 4.x slaves send none.
	RequireIdentity bool
	// OnAck, when set, is told the acknowledgement WaitForAck goes by each time it changes
	// (math.MaxInt64 when the SyncStateSet is the master alone): the confirm offset a broker
	// in controller mode bounds its consumers by. It runs under the group-transfer lock, so
	// it must be quick and must not call the Master.
	OnAck func(acked int64)
	// Logger receives logs with component=replication, role=master; nil means silent.
	Logger *zerolog.Logger
}

func (o MasterOptions) withDefaults() MasterOptions {
	if o.ListenAddr == "" {
		o.ListenAddr = DefaultListenAddr
	}
	if o.TransferBatchBytes == 0 {
		o.TransferBatchBytes = config.DefaultHATransferBatchBytes
	}
	if o.HousekeepingInterval == 0 {
		o.HousekeepingInterval = config.DefaultHAHousekeepingInterval
	}
	if o.SendHeartbeatInterval == 0 {
		o.SendHeartbeatInterval = config.DefaultHASendHeartbeatInterval
	}
	if o.SlaveFallBehindMax == 0 {
		o.SlaveFallBehindMax = config.DefaultHASlaveFallBehindMax
	}
	if o.SyncFlushTimeout == 0 {
		o.SyncFlushTimeout = DefaultSyncFlushTimeout
	}
	if o.TransferWaitInterval == 0 {
		o.TransferWaitInterval = config.DefaultHATransferWaitInterval
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	o.Secret = bytes.Clone(o.Secret)
	if o.Logger == nil {
		l := zerolog.Nop()
		o.Logger = &l
	}
	return o
}

func (o MasterOptions) validate() error {
	var errs []error
	if o.TransferBatchBytes < 0 || o.TransferBatchBytes > MaxBlockBytes {
		errs = append(errs, fmt.Errorf("replication: TransferBatchBytes %d not in [1, %d]", o.TransferBatchBytes, MaxBlockBytes))
	}
	errs = append(errs, positive("HousekeepingInterval", o.HousekeepingInterval),
		positive("SendHeartbeatInterval", o.SendHeartbeatInterval),
		positive("SyncFlushTimeout", o.SyncFlushTimeout),
		positive("TransferWaitInterval", o.TransferWaitInterval),
		positive("HandshakeTimeout", o.HandshakeTimeout),
		checkSecret(o.Secret))
	if o.SlaveFallBehindMax < 0 {
		errs = append(errs, fmt.Errorf("replication: SlaveFallBehindMax %d is negative", o.SlaveFallBehindMax))
	}
	if o.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("replication: MaxConnections %d is negative", o.MaxConnections))
	}
	return errors.Join(errs...)
}

// SlaveOptions configures a Slave. The zero value of every field means the default.
type SlaveOptions struct {
	// MasterAddr is the master's HA address host:port (haMasterAddress). It may be empty and
	// set later with Slave.SetMasterAddr (RocketMQ learns it from the name service).
	MasterAddr string
	// HousekeepingInterval is haHousekeepingInterval: a master silent this long (it sends an
	// empty block every SendHeartbeatInterval) is dropped and dialed again, 20 s.
	HousekeepingInterval time.Duration
	// SendHeartbeatInterval is haSendHeartbeatInterval: the slave reports its offset at least
	// this often, besides after every block, 5 s.
	SendHeartbeatInterval time.Duration
	// ReconnectInterval is the wait before dialing again after a failed dial or a connection
	// that broke before the first valid block, 5 s (RocketMQ HAClient). A connection that
	// carried data is dialed again at once.
	ReconnectInterval time.Duration
	// Secret is the master's MasterOptions.Secret: the slave proves it knows it and follows
	// only a master that proves the same (doc.go, Authentication). Empty speaks RocketMQ's
	// protocol, for a master without a secret. NewSlave keeps a copy.
	Secret []byte
	// HandshakeTimeout bounds the whole handshake when Secret is set, and the TLS handshake,
	// 3 s.
	HandshakeTimeout time.Duration
	// TLSConfig, when set, makes the slave dial its master with TLS; ServerName defaults to
	// the master's host.
	TLSConfig *tls.Config
	// BrokerID, when above 0, is sent to the master after the handshake (doc.go, Identity),
	// for a master with MasterOptions.RequireIdentity (controller mode). 0 sends nothing.
	BrokerID int64
	// Logger receives logs with component=replication, role=slave; nil means silent.
	Logger *zerolog.Logger
}

func (o SlaveOptions) withDefaults() SlaveOptions {
	if o.HousekeepingInterval == 0 {
		o.HousekeepingInterval = config.DefaultHAHousekeepingInterval
	}
	if o.SendHeartbeatInterval == 0 {
		o.SendHeartbeatInterval = config.DefaultHASendHeartbeatInterval
	}
	if o.ReconnectInterval == 0 {
		o.ReconnectInterval = config.DefaultHAReconnectInterval
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	o.Secret = bytes.Clone(o.Secret)
	if o.Logger == nil {
		l := zerolog.Nop()
		o.Logger = &l
	}
	return o
}

func (o SlaveOptions) validate() error {
	return errors.Join(positive("HousekeepingInterval", o.HousekeepingInterval),
		positive("SendHeartbeatInterval", o.SendHeartbeatInterval),
		positive("ReconnectInterval", o.ReconnectInterval),
		positive("HandshakeTimeout", o.HandshakeTimeout),
		checkSecret(o.Secret))
}

// checkSecret refuses a secret too short to resist guessing; the error never shows it.
func checkSecret(secret []byte) error {
	if len(secret) > 0 && len(secret) < MinSecretBytes {
		return fmt.Errorf("replication: Secret has %d bytes, want none or at least %d", len(secret), MinSecretBytes)
	}
	return nil
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("replication: %s %v must be positive", name, d)
	}
	return nil
}
