package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mqgo/mq/storage"
)

// Mode is how a seed's broker group decides its master.
type Mode string

const (
	// Classic is RocketMQ 4's master and slave: fixed roles, the master SYNC_MASTER or
	// ASYNC_MASTER, no failover (the slave serves reads while the master is away).
	Classic Mode = "classic"
	// Controlled is RocketMQ 5's controller mode: three controllers (one Raft group, each in a
	// name server) elect the group's master among its brokers and replace it when it dies.
	Controlled Mode = "controller"
)

// Config is what a seed runs: the cluster's shape and settings, the workload, how long the
// faults last. Everything in it follows from the seed (newConfig).
type Config struct {
	Mode        Mode
	NameServers int
	Brokers     int // brokers of the one group: a master and its slaves, or controller-mode peers
	Role        storage.BrokerRole
	Flush       storage.FlushDiskType
	Queues      int
	Producers   int
	Consumers   int
	// PowerLoss lets kills lose what brokers did not fsync; only where an acknowledged message
	// must survive that (SYNC_FLUSH, fixed roles), else kills are process crashes, which keep
	// the page cache.
	PowerLoss bool
	// Chaos is how long faults are injected; then the cluster is healed and given Settle to
	// deliver every acknowledged message.
	Chaos  time.Duration
	Settle time.Duration
}

func (c Config) String() string {
	return fmt.Sprintf("mode=%s nameservers=%d brokers=%d role=%s flush=%s queues=%d producers=%d consumers=%d powerloss=%v chaos=%v settle=%v",
		c.Mode, c.NameServers, c.Brokers, c.Role, c.Flush, c.Queues, c.Producers, c.Consumers, c.PowerLoss, c.Chaos, c.Settle)
}

// newConfig draws a seed's configuration.
func newConfig(r *rand.Rand, chaos time.Duration) Config {
	c := Config{Queues: 2 + r.IntN(3), Producers: 1 + r.IntN(2), Consumers: 1 + r.IntN(2),
		Chaos: chaos, Settle: 3 * time.Minute, Flush: storage.AsyncFlush}
	if r.IntN(2) == 0 {
		c.Flush = storage.SyncFlush
	}
	if r.IntN(2) == 0 {
		c.Mode = Controlled
		c.NameServers = 3
		c.Brokers = 2 + r.IntN(2)
		return c
	}
	c.Mode = Classic
	c.NameServers = 1 + r.IntN(2)
	c.Brokers = 2
	c.Role = storage.AsyncMaster
	if r.IntN(2) == 0 {
		c.Role = storage.SyncMaster
	}
	c.PowerLoss = c.Flush == storage.SyncFlush
	return c
}

// Periods the nodes and clients run with: RocketMQ's own scaled down, so that a failover or a
// rebalance takes simulated seconds rather than minutes, and kept above the faults' timescale
// so that a healthy cluster does not flap. Simulated time costs wall time only per event, so
// these trade how much happens per simulated minute against how fast it runs.
const (
	registerPeriod        = time.Second      // registerNameServerPeriod, 30 s
	brokerExpiry          = 10 * time.Second // BROKER_CHANNEL_EXPIRED_TIME, 120 s
	scanInterval          = time.Second      // scanNotActiveBrokerInterval, 5 s
	offsetFlushInterval   = time.Second      // flushConsumerOffsetInterval, 5 s
	haHeartbeat           = time.Second      // haSendHeartbeatInterval, 5 s
	haHousekeeping        = 10 * time.Second // haHousekeepingInterval, 20 s
	slaveSyncPeriod       = time.Second      // SlaveSynchronize's 10 s
	ctlScanInterval       = 500 * time.Millisecond
	ctlHeartbeatTimeout   = 3 * time.Second // controllerHeartBeatTimeoutMills, 10 s
	ctlRaftTimeout        = 500 * time.Millisecond
	brokerCtlHeartbeat    = 500 * time.Millisecond // brokerHeartbeatInterval, 1 s
	syncMetadataPeriod    = time.Second            // syncBrokerMetadataPeriod, 5 s
	checkSyncStatePeriod  = time.Second            // checkSyncStateSetPeriod, 5 s
	slaveNotCatchup       = 5 * time.Second        // haMaxTimeSlaveNotCatchup, 15 s
	clientRoutePeriod     = time.Second            // pollNameServerInterval, 30 s
	clientHeartbeat       = time.Second            // heartbeatBrokerInterval, 30 s
	rebalanceInterval     = time.Second            // 20 s
	persistInterval       = time.Second            // persistConsumerOffsetInterval, 5 s
	pullErrorDelay        = 200 * time.Millisecond // 3 s
	segmentBytes          = 256 << 10
	consumeQueueFileBytes = 20 * 2000
	maxHashSlots          = 512
	maxIndexEntries       = 2048
	topic                 = "SimTopic"
	group                 = "sim-group"
)
