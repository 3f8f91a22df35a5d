package route

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mqgo/mq/remoting"
)

// Bounds on the table, so that what a registration can make the name server hold, and the
// GET_BROKER_CLUSTER_INFO and GET_ROUTEINFO_BY_TOPIC answers built from it, stay bounded
// (RocketMQ has none). Broker names and cluster names are never more than addresses: a name
// goes with its last address, and a broker name is in one cluster, its latest.
const (
	// maxBrokerAddrs caps the registered broker addresses: a route lists at most this many
	// broker datas and queue datas, each bounded by maxIdentityBytes and Options.MaxQueueNums. The
	// largest RocketMQ deployments run hundreds of brokers per name server.
	maxBrokerAddrs = 4096
	// maxTopicsPerBroker caps the topics with queue data on one broker name. Topics a broker
	// stops reporting are kept (see updateQueueDataLocked), so without it a broker that
	// registers new topics under each new data version would grow the table without end.
	maxTopicsPerBroker = maxRegisterTopics
)

// errTooManyBrokers refuses a registration from a new address when the table holds
// maxBrokerAddrs addresses.
var errTooManyBrokers = errors.New("the name server holds the most broker addresses it takes")

// brokerLiveInfo is what the name server knows about one broker address's liveness.
type brokerLiveInfo struct {
	lastUpdate   time.Time
	dataVersion  DataVersion
	channel      remoting.Channel // the connection the broker last registered on; may be nil
	haServerAddr string
}

// registration is one REGISTER_BROKER request, decoded.
type registration struct {
	cluster, brokerName, brokerAddr, haServerAddr string
	brokerID                                      int64
	topics                                        map[string]TopicConfig
	dataVersion                                   DataVersion
	channel                                       remoting.Channel
}

// removedBroker describes one broker address that left the table.
type removedBroker struct {
	addr       string
	brokerName string // "" when the address was in no broker data
	nameGone   bool   // the broker name had no address left and was removed with its queues
	channel    remoting.Channel
}

// table is the name server's route table: RocketMQ 4.x's RouteInfoManager. All fields are
// guarded by mu; methods named ...Locked need it held (write lock unless stated).
type table struct {
	mu sync.RWMutex
	// topicQueue: topic -> broker name -> queue data.
	topicQueue map[string]map[string]QueueData
	// brokerAddr: broker name -> broker data. Entries are owned by the table; readers copy.
	brokerAddr map[string]*BrokerData
	// clusterAddr: cluster name -> set of broker names.
	clusterAddr map[string]map[string]struct{}
	// brokerLive: broker address -> liveness.
	brokerLive map[string]*brokerLiveInfo
	// nameTopics: broker name -> number of topics in topicQueue with its queue data.
	nameTopics map[string]int

	// maxAddrs and maxTopics are maxBrokerAddrs and maxTopicsPerBroker; tests lower them.
	maxAddrs, maxTopics int
}

func newTable() *table {
	return &table{
		topicQueue:  make(map[string]map[string]QueueData),
		brokerAddr:  make(map[string]*BrokerData),
		clusterAddr: make(map[string]map[string]struct{}),
		brokerLive:  make(map[string]*brokerLiveInfo),
		nameTopics:  make(map[string]int),
		maxAddrs:    maxBrokerAddrs,
		maxTopics:   maxTopicsPerBroker,
	}
}

// registered is what register did with a registration.
type registered struct {
	// masterAddr and masterHA are, for a slave whose master is alive, the master's address and
	// HA address.
	masterAddr, masterHA string
	// isNew: the address was not registered.
	isNew bool
	// overCap counts topics left out because the broker name holds maxTopicsPerBroker.
	overCap int
}

// register records a broker (RouteInfoManager.registerBroker). It refuses (errTooManyBrokers)
// a new address when the table holds maxBrokerAddrs of them, and changes nothing then.
func (t *table) register(r *registration, now time.Time) (registered, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var res registered
	res.isNew = t.brokerLive[r.brokerAddr] == nil
	if res.isNew && len(t.brokerLive) >= t.maxAddrs {
		return res, errTooManyBrokers
	}

	first := false
	bd := t.brokerAddr[r.brokerName]
	if bd == nil {
		first = true
		bd = &BrokerData{Cluster: r.cluster, BrokerName: r.brokerName, BrokerAddrs: make(map[int64]string)}
		t.brokerAddr[r.brokerName] = bd
	} else if bd.Cluster != r.cluster {
		// RocketMQ leaves the name in its old cluster too; moving it keeps the cluster table
		// no larger than the broker table, whatever cluster names one broker sends.
		t.leaveClusterLocked(bd.Cluster, r.brokerName)
		bd.Cluster = r.cluster
	}
	names := t.clusterAddr[r.cluster]
	if names == nil {
		names = make(map[string]struct{})
		t.clusterAddr[r.cluster] = names
	}
	names[r.brokerName] = struct{}{}

	// One address has one id: a slave promoted to master (same address, new id) loses its old
	// entry first.
	for id, addr := range bd.BrokerAddrs {
		if addr == r.brokerAddr && id != r.brokerID {
			delete(bd.BrokerAddrs, id)
		}
	}
	if _, ok := bd.BrokerAddrs[r.brokerID]; !ok {
		first = true
	}
	bd.BrokerAddrs[r.brokerID] = r.brokerAddr

	if r.brokerID == MasterID && (first || t.dataVersionChangedLocked(r.brokerAddr, r.dataVersion)) {
		for _, tc := range r.topics {
			qd := QueueData{BrokerName: r.brokerName, ReadQueueNums: tc.ReadQueueNums,
				WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicSynFlag: tc.TopicSysFlag}
			if !t.updateQueueDataLocked(tc.TopicName, qd) {
				res.overCap++
			}
		}
	}

	t.brokerLive[r.brokerAddr] = &brokerLiveInfo{lastUpdate: now, dataVersion: r.dataVersion,
		channel: r.channel, haServerAddr: r.haServerAddr}

	if r.brokerID != MasterID {
		if m := bd.BrokerAddrs[MasterID]; m != "" {
			if live := t.brokerLive[m]; live != nil {
				res.masterAddr, res.masterHA = m, live.haServerAddr
			}
		}
	}
	return res, nil
}

// updateQueueDataLocked is RouteInfoManager.createAndUpdateQueueData. Topics the broker no longer
// reports are kept, as in RocketMQ 4.x: brokers may register only what changed
// (registerIncrementBrokerData), and deletions arrive as DELETE_TOPIC_IN_NAMESRV. It reports
// false, changing nothing, for a topic new to a broker name that holds maxTopicsPerBroker.
func (t *table) updateQueueDataLocked(topic string, qd QueueData) bool {
	if topic == "" {
		return true
	}
	m := t.topicQueue[topic]
	if _, ok := m[qd.BrokerName]; !ok {
		if t.nameTopics[qd.BrokerName] >= t.maxTopics {
			return false
		}
		t.nameTopics[qd.BrokerName]++
	}
	if m == nil {
		m = make(map[string]QueueData)
		t.topicQueue[topic] = m
	}
	m[qd.BrokerName] = qd
	return true
}

// leaveClusterLocked takes brokerName out of cluster, and drops the cluster when it is left
// empty.
func (t *table) leaveClusterLocked(cluster, brokerName string) {
	names := t.clusterAddr[cluster]
	delete(names, brokerName)
	if len(names) == 0 {
		delete(t.clusterAddr, cluster)
	}
}

// dataVersionChangedLocked reports whether addr is unknown or last registered another version.
// t.mu must be held (read or write).
func (t *table) dataVersionChangedLocked(addr string, dv DataVersion) bool {
	live := t.brokerLive[addr]
	return live == nil || live.dataVersion != dv
}

// queryDataVersion is isBrokerTopicConfigChanged; when unchanged it also refreshes the
// broker's liveness (QUERY_DATA_VERSION counts as a heartbeat). It returns the version the name
// server holds, if any.
func (t *table) queryDataVersion(addr string, dv DataVersion, now time.Time) (changed bool,
	held DataVersion, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.brokerLive[addr]
	if live == nil {
		return true, DataVersion{}, false
	}
	if live.dataVersion == dv {
		live.lastUpdate = now
		return false, live.dataVersion, true
	}
	return true, live.dataVersion, true
}

// unregister is RouteInfoManager.unregisterBroker: it removes the broker's liveness and its id's
// address (only if that id still maps to addr, so a late unregister cannot remove a newer
// broker), and the broker name with its queue datas when no address is left.
func (t *table) unregister(brokerName, addr string, id int64) removedBroker {
	t.mu.Lock()
	defer t.mu.Unlock()
	rb := removedBroker{addr: addr}
	if live := t.brokerLive[addr]; live != nil {
		rb.channel = live.channel
		delete(t.brokerLive, addr)
	}
	bd := t.brokerAddr[brokerName]
	if bd == nil || bd.BrokerAddrs[id] != addr {
		return rb
	}
	rb.brokerName = brokerName
	delete(bd.BrokerAddrs, id)
	if len(bd.BrokerAddrs) == 0 {
		rb.nameGone = true
		t.removeBrokerNameLocked(brokerName)
	}
	return rb
}

// removeAddrLocked is RouteInfoManager.onChannelDestroy for a known address: drop its liveness,
// drop the address from its broker data, and when the broker name has no address left, drop the
// name from every cluster and its queue data from every topic (and topics left empty).
func (t *table) removeAddrLocked(addr string) removedBroker {
	rb := removedBroker{addr: addr}
	if live := t.brokerLive[addr]; live != nil {
		rb.channel = live.channel
		delete(t.brokerLive, addr)
	}
	for name, bd := range t.brokerAddr {
		for id, a := range bd.BrokerAddrs {
			if a == addr {
				delete(bd.BrokerAddrs, id)
				rb.brokerName = name
				break
			}
		}
		if rb.brokerName == "" {
			continue
		}
		if len(bd.BrokerAddrs) == 0 {
			rb.nameGone = true
			t.removeBrokerNameLocked(name)
		}
		break
	}
	return rb
}

// removeBrokerNameLocked drops a broker name that has no address left: its broker data, its
// membership in its cluster (and the cluster when left empty), and its queue data in every
// topic (and topics left without queue data).
func (t *table) removeBrokerNameLocked(brokerName string) {
	if bd := t.brokerAddr[brokerName]; bd != nil {
		t.leaveClusterLocked(bd.Cluster, brokerName)
	}
	delete(t.brokerAddr, brokerName)
	delete(t.nameTopics, brokerName)
	for topic, m := range t.topicQueue {
		delete(m, brokerName)
		if len(m) == 0 {
			delete(t.topicQueue, topic)
		}
	}
}

// removeChannel removes every broker that last registered over ch (a closed connection). Brokers
// of one process that share a transport share its channel, so there may be several.
func (t *table) removeChannel(ch remoting.Channel) []removedBroker {
	if ch == nil {
		return nil
	}
	id := ch.ID()
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []removedBroker
	for addr, live := range t.brokerLive {
		if live.channel != nil && live.channel.ID() == id {
			gone = append(gone, t.removeAddrLocked(addr))
		}
	}
	return gone
}

// expire removes every broker whose last registration is older than now-expiry
// (scanNotActiveBroker). It returns them, with channel left nil where a broker still alive
// shares it: the caller closes the channels it gets.
func (t *table) expire(now time.Time, expiry time.Duration) []removedBroker {
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []removedBroker
	for addr, live := range t.brokerLive {
		if live.lastUpdate.Add(expiry).Before(now) {
			gone = append(gone, t.removeAddrLocked(addr))
		}
	}
	for i := range gone {
		if ch := gone[i].channel; ch != nil {
			for _, live := range t.brokerLive {
				if live.channel != nil && live.channel.ID() == ch.ID() {
					gone[i].channel = nil
					break
				}
			}
		}
	}
	return gone
}

// topicRoute is pickupTopicRouteData: the topic's queue datas sorted by broker name and the broker
// datas of those broker names. ok is false when the topic has no queue data or none of its broker
// names is known.
func (t *table) topicRoute(topic string) (r *TopicRouteData, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := t.topicQueue[topic]
	if len(m) == 0 {
		return nil, false
	}
	r = &TopicRouteData{QueueDatas: make([]QueueData, 0, len(m)), BrokerDatas: make([]BrokerData, 0, len(m))}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		r.QueueDatas = append(r.QueueDatas, m[name])
		if bd := t.brokerAddr[name]; bd != nil {
			r.BrokerDatas = append(r.BrokerDatas, bd.Clone())
		}
	}
	return r, len(r.BrokerDatas) > 0
}

// clusterInfo copies the broker and cluster tables.
func (t *table) clusterInfo() *ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	c := &ClusterInfo{BrokerAddrTable: make(map[string]BrokerData, len(t.brokerAddr)),
		ClusterAddrTable: make(map[string][]string, len(t.clusterAddr))}
	for name, bd := range t.brokerAddr {
		c.BrokerAddrTable[name] = bd.Clone()
	}
	for cluster, names := range t.clusterAddr {
		c.ClusterAddrTable[cluster] = slices.Sorted(maps.Keys(names))
	}
	return c
}

// topics returns every topic name, sorted.
func (t *table) topics() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.topicQueue))
}

// topicsByCluster returns, sorted, the topics with queue data on a broker name of cluster.
func (t *table) topicsByCluster(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := t.clusterAddr[cluster]
	out := []string{}
	for topic, m := range t.topicQueue {
		for name := range m {
			if _, ok := names[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// deleteTopic forgets a topic's queue data on every broker.
func (t *table) deleteTopic(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.topicQueue[topic] {
		if t.nameTopics[name]--; t.nameTopics[name] <= 0 {
			delete(t.nameTopics, name)
		}
	}
	delete(t.topicQueue, topic)
}

// registerTopic records queue datas for topic (REGISTER_TOPIC_IN_NAMESRV), their queue counts
// clamped into [0, maxQ]. Every queue data must name a known broker; it reports the
// first unknown broker name and changes nothing then. A broker name that holds
// maxTopicsPerBroker topics is left out of a topic new to it (overCap counts them).
func (t *table) registerTopic(topic string, qds []QueueData, maxQ int32) (unknownBroker string, overCap int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range qds {
		if _, ok := t.brokerAddr[qds[i].BrokerName]; !ok {
			return qds[i].BrokerName, 0
		}
	}
	for _, qd := range qds {
		qd.ReadQueueNums, qd.WriteQueueNums = clampQueueNums(qd.ReadQueueNums, maxQ), clampQueueNums(qd.WriteQueueNums, maxQ)
		if !t.updateQueueDataLocked(topic, qd) {
			overCap++
		}
	}
	return "", overCap
}

// liveBrokers returns the registered broker addresses, sorted (for tests and admin).
func (t *table) liveBrokers() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.brokerLive))
}
