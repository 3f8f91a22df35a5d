package dashboard

import (
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// maxBrokers bounds how many broker addresses one sample asks for runtime info: a name server's
// cluster table is network input.
const maxBrokers = 256

// Runtime info keys (RocketMQ BrokerController.prepareRuntimeInfo and DefaultMessageStore).
const (
	keyPutTps       = "putTps"           // "10s 60s 600s" messages/s
	keyGetTps       = "getTransferedTps" // RocketMQ's spelling
	keyPutTotal     = "msgPutTotalTodayNow"
	keyGetTotal     = "msgGetTotalTodayNow"
	keyDiskRatio    = "commitLogDiskRatio"
	keyVersion      = "brokerVersionDesc"
	keyBootMillis   = "bootTimestamp"
	keyCommitLogMax = "commitLogMaxOffset"
)

// brokerRow is one broker address of the cluster table with its runtime figures. Pointers are
// figures the broker did not give (JSON null, shown as a dash).
type brokerRow struct {
	Cluster    string   `json:"cluster"`
	BrokerName string   `json:"brokerName"`
	BrokerID   int64    `json:"brokerId"`
	Role       string   `json:"role"`
	Addr       string   `json:"addr"`
	Version    string   `json:"version,omitempty"`
	PutTPS     *float64 `json:"putTps"`
	GetTPS     *float64 `json:"getTps"`
	PutTotal   *int64   `json:"putTotal"`
	GetTotal   *int64   `json:"getTotal"`
	DiskRatio  *float64 `json:"diskRatio"`
	StoreBytes *int64   `json:"storeBytes"`
	BootTime   *int64   `json:"bootTime"` // unix ms
	Error      string   `json:"error,omitempty"`
	// Status is "up" (registered and answering) or "down" (registered but not answering, or
	// seen before and no longer registered), until an operator clears it (brokers.go).
	Status string `json:"status"`
	// Registered says the name servers' cluster table lists it.
	Registered bool `json:"registered"`
	// DownSince is when this dashboard first saw it down, LastSeen when it last answered
	// (unix ms, 0 = never).
	DownSince int64 `json:"downSince,omitempty"`
	LastSeen  int64 `json:"lastSeen,omitempty"`
}

// point is one sample of the cluster's throughput, in messages per second.
type point struct {
	T   int64   `json:"t"` // unix ms
	Put float64 `json:"put"`
	Get float64 `json:"get"`
}

// snapshot is one sample of the cluster: its table, each broker's figures, and when.
type snapshot struct {
	at       time.Time
	clusters map[string][]string // cluster -> broker names
	brokers  []brokerRow
	// totals by address, for deriving rates when a broker gives no TPS keys.
	totals map[string][2]int64
}

// sampler takes cluster snapshots for the overview, at most one per minInterval whatever the
// number of pages polling, keeps the cluster throughput of the last window in a ring, and
// remembers the brokers it has seen so that one that stops is shown down rather than dropped.
// Server's loop (run) samples every Refresh, so a page opened later finds the history and the
// brokers that went down meanwhile; a page's poll samples too when the last sample is older
// than minInterval.
type sampler struct {
	src         source
	minInterval time.Duration
	window      time.Duration

	// turn is held by the one request sampling; the others wait on it or on their context.
	turn    chan struct{}
	mu      sync.Mutex // guards last, history and seen
	last    *snapshot
	history []point
	seen    map[string]*seenBroker // by address, at most maxSeenBrokers (brokers.go)
}

func newSampler(src source, minInterval, window time.Duration) *sampler {
	return &sampler{src: src, minInterval: minInterval, window: window, turn: make(chan struct{}, 1),
		seen: map[string]*seenBroker{}}
}

// run samples every period until ctx ends; a failed sample is retried at the next tick.
func (s *sampler) run(ctx context.Context, period time.Duration, log zerolog.Logger) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		if _, _, err := s.current(ctx); err != nil && ctx.Err() == nil {
			log.Debug().Err(err).Msg("cluster sample failed")
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// current returns a snapshot no older than minInterval, sampling if needed, and the history.
func (s *sampler) current(ctx context.Context) (*snapshot, []point, error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-s.turn }()
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	if last == nil || time.Since(last.at) >= s.minInterval {
		next, err := s.sample(ctx, last)
		if err != nil {
			return nil, nil, err
		}
		s.record(next)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, slices.Clone(s.history), nil
}

func (s *sampler) sample(ctx context.Context, prev *snapshot) (*snapshot, error) {
	ci, err := s.src.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{clusters: map[string][]string{}, totals: map[string][2]int64{}}
	for cluster, brokerNames := range ci.ClusterAddrTable {
		snap.clusters[cluster] = slices.Clone(brokerNames)
	}
	for _, name := range slices.Sorted(maps.Keys(ci.BrokerAddrTable)) {
		bd := ci.BrokerAddrTable[name]
		for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			if len(snap.brokers) == maxBrokers {
				break
			}
			role := "SLAVE"
			if id == route.MasterID {
				role = "MASTER"
			}
			snap.brokers = append(snap.brokers, brokerRow{Cluster: bd.Cluster, BrokerName: name,
				BrokerID: id, Role: role, Addr: bd.BrokerAddrs[id], Registered: true, Status: statusUp})
		}
	}
	infos := make([]map[string]string, len(snap.brokers))
	errs := make([]error, len(snap.brokers))
	forEach(ctx, len(snap.brokers), func(ctx context.Context, i int) {
		infos[i], errs[i] = s.src.BrokerRuntimeInfo(ctx, snap.brokers[i].Addr)
	})
	snap.at = time.Now()
	for i := range snap.brokers {
		b := &snap.brokers[i]
		if errs[i] != nil {
			b.Error, b.Status = truncate(errs[i].Error(), errorTextBytes), statusDown
			continue
		}
		fillRuntime(b, infos[i])
		if b.PutTotal != nil && b.GetTotal != nil {
			snap.totals[b.Addr] = [2]int64{*b.PutTotal, *b.GetTotal}
		}
		if prev == nil {
			continue
		}
		// Without RocketMQ's TPS keys, the rate is the counters' rise since the last sample.
		before, ok := prev.totals[b.Addr]
		elapsed := snap.at.Sub(prev.at).Seconds()
		if !ok || elapsed <= 0 {
			continue
		}
		if b.PutTPS == nil && b.PutTotal != nil && *b.PutTotal >= before[0] {
			b.PutTPS = ptr(float64(*b.PutTotal-before[0]) / elapsed)
		}
		if b.GetTPS == nil && b.GetTotal != nil && *b.GetTotal >= before[1] {
			b.GetTPS = ptr(float64(*b.GetTotal-before[1]) / elapsed)
		}
	}
	return snap, nil
}

// fillRuntime reads the figures the dashboard shows from a runtime info table, ignoring any
// that is absent or does not parse.
func fillRuntime(b *brokerRow, info map[string]string) {
	b.Version = truncate(info[keyVersion], 64)
	b.PutTPS = parseTPS(info[keyPutTps])
	b.GetTPS = parseTPS(info[keyGetTps])
	b.PutTotal = parseCount(info[keyPutTotal])
	b.GetTotal = parseCount(info[keyGetTotal])
	b.StoreBytes = parseCount(info[keyCommitLogMax])
	b.BootTime = parseCount(info[keyBootMillis])
	if r, err := strconv.ParseFloat(strings.TrimSpace(info[keyDiskRatio]), 64); err == nil && r >= 0 && r <= 1 {
		b.DiskRatio = &r
	}
}

// parseTPS reads RocketMQ's "10s 60s 600s" rates: the first, the most recent.
func parseTPS(v string) *float64 {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return nil
	}
	f, err := strconv.ParseFloat(fields[0], 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	return &f
}

func parseCount(v string) *int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}

// record makes snap the last snapshot, with the brokers seen before and no longer registered
// added as down, and adds the cluster's throughput to the history: put on masters (a slave's
// copy is not a put), get on every broker (slaves serve reads too).
func (s *sampler) record(snap *snapshot) {
	var p point
	known := false
	for _, b := range snap.brokers {
		if b.PutTPS != nil && b.Role == "MASTER" {
			p.Put += *b.PutTPS
			known = true
		}
		if b.GetTPS != nil {
			p.Get += *b.GetTPS
			known = true
		}
	}
	p.T = snap.at.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reconcile(snap)
	s.last = snap
	if !known {
		return
	}
	s.history = append(s.history, p)
	cut := snap.at.Add(-s.window).UnixMilli()
	drop := 0
	for drop < len(s.history) && (s.history[drop].T < cut || len(s.history)-drop > maxHistorySamples) {
		drop++
	}
	s.history = slices.Delete(s.history, 0, drop)
}

func ptr[T any](v T) *T { return &v }
