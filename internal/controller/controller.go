// Package controller is RocketMQ 5's controller on hashicorp/raft: a small replicated store of
// each broker group's master, master epoch and SyncStateSet, which elects a new master from the
// in-sync brokers when the master's heartbeats stop.
//
// Every change is a JSON command applied through Raft on the leader; reads answer from the
// leader's copy of the state. Heartbeats are not replicated: each controller keeps the liveness
// of the brokers that heartbeat to it (brokers heartbeat to every controller, as RocketMQ's do),
// and only the leader acts on it, after giving every broker a fresh deadline when it takes
// over.
//
// With a cluster secret (Options.Secret, at least MinSecretBytes) every Raft connection proves
// it at both ends before Raft reads a byte (stream.go); without one, whoever reaches the Raft
// port can rewrite the state, so that port must stay private.
package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
)

// ErrNotLeader is returned by the Go methods of a controller that is not the ready leader.
var ErrNotLeader = errors.New("controller: not the leader")

// Controller is one member of the controller cluster.
type Controller struct {
	opts Options
	log  zerolog.Logger

	fsm       *fsm
	raft      *raft.Raft
	transport *raft.NetworkTransport
	store     *logStore // nil in memory

	live *liveTable

	// ready is set once this leader has caught up with the log and announced itself; cleared
	// as soon as leadership is lost.
	ready atomic.Bool
	// decideMu serialises the decisions that read the state and then propose a change, so two
	// of them never decide from the same state (RocketMQ runs them on one event thread).
	decideMu decideLock

	mu        sync.Mutex // guards running and closed, so Close waits for a Run that started
	running   bool
	closed    bool
	runs      sync.WaitGroup
	closeOnce sync.Once
	done      chan struct{}
	closeErr  error
}

// decideLock is a mutex whose waiters wait on a channel. A decision holds it across a Raft
// apply, which waits up to ApplyTimeout; a goroutine waiting for a sync.Mutex is not durably
// blocked in a testing/synctest bubble, so there the clock stopped for good and the apply never
// timed out (the simulation, internal/sim, seed 224), while one waiting on a channel is.
type decideLock chan struct{}

func (l decideLock) Lock()   { l <- struct{}{} }
func (l decideLock) Unlock() { <-l }

// New starts the Raft member (it joins elections at once); Run starts the leader's duties.
func New(opts Options) (*Controller, error) {
	opts = withDefaults(opts)
	if err := validate(opts); err != nil {
		return nil, err
	}
	log := zerolog.Nop()
	if opts.Logger != nil {
		log = *opts.Logger
	}
	log = log.With().Str("component", "controller").Str("controllerId", opts.ID).Logger()
	c := &Controller{opts: opts, log: log, fsm: newFSM(), live: newLiveTable(), decideMu: make(decideLock, 1),
		done: make(chan struct{})}
	if err := c.startRaft(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) startRaft() (err error) {
	hl := newRaftLogger(c.log)
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(c.opts.ID)
	conf.HeartbeatTimeout = c.opts.HeartbeatTimeout
	conf.ElectionTimeout = c.opts.ElectionTimeout
	conf.LeaderLeaseTimeout = c.opts.LeaderLeaseTimeout
	conf.CommitTimeout = c.opts.CommitTimeout
	conf.Logger = hl
	if err := raft.ValidateConfig(conf); err != nil {
		return fmt.Errorf("controller: %w", err)
	}

	var logs raft.LogStore
	var stable raft.StableStore
	var snaps raft.SnapshotStore
	if c.opts.Dir == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, raft.NewInmemSnapshotStore()
	} else {
		store, err := openLogStore(filepath.Join(c.opts.Dir, "raft.db"))
		if err != nil {
			return fmt.Errorf("controller: raft log: %w", err)
		}
		c.store = store
		defer func() {
			if err != nil {
				_ = store.Close()
			}
		}()
		logs, stable = store, store
		fss, err := raft.NewFileSnapshotStoreWithLogger(c.opts.Dir, snapshotsRetained, hl)
		if err != nil {
			return fmt.Errorf("controller: snapshots: %w", err)
		}
		snaps = fss
	}

	advertise, err := net.ResolveTCPAddr("tcp", c.opts.Peers[c.opts.ID])
	if err != nil {
		return fmt.Errorf("controller: Peers[%q]: %w", c.opts.ID, err)
	}
	trans, err := c.newTransport(advertise, hl)
	if err != nil {
		return err
	}
	c.transport = trans
	defer func() {
		if err != nil {
			_ = trans.Close()
		}
	}()

	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if !existing {
		var cfg raft.Configuration
		for _, id := range slices.Sorted(maps.Keys(c.opts.Peers)) {
			cfg.Servers = append(cfg.Servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(c.opts.Peers[id])})
		}
		if err := raft.BootstrapCluster(conf, logs, stable, snaps, trans, cfg); err != nil {
			return fmt.Errorf("controller: bootstrap: %w", err)
		}
	}
	r, err := raft.NewRaft(conf, c.fsm, logs, stable, snaps, trans)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	c.raft = r
	return nil
}

const (
	snapshotsRetained = 2
	transportPool     = 3
	transportTimeout  = 10 * time.Second
)

// Run does the leader's duties until ctx ends or Close: on winning an election it catches up
// and announces itself, then scans for dead masters every ScanNotActiveBrokerInterval. It
// returns nil; calling it twice returns at once.
func (c *Controller) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running || c.closed {
		c.mu.Unlock()
		return nil
	}
	c.running = true
	c.runs.Add(1)
	c.mu.Unlock()
	defer c.runs.Done()
	leaderCh := c.raft.LeaderCh()
	tick := time.NewTicker(c.opts.ScanNotActiveBrokerInterval)
	defer tick.Stop()
	if c.raft.State() == raft.Leader {
		c.takeOver()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.done:
			return nil
		case isLeader := <-leaderCh:
			if isLeader {
				c.takeOver()
			} else {
				c.ready.Store(false)
				c.log.Info().Msg("lost leadership")
			}
		case <-tick.C:
			c.live.expire(time.Now())
			if !c.ready.Load() && c.raft.State() == raft.Leader {
				c.takeOver() // an earlier attempt timed out
			}
			if c.IsLeader() {
				c.scanInactiveMasters()
			}
		}
	}
}

// takeOver makes a new leader ready: its state must hold every committed change before it
// decides anything, and the brokers must get a full heartbeat timeout before it judges them.
func (c *Controller) takeOver() {
	if err := c.raft.Barrier(c.opts.ApplyTimeout).Error(); err != nil {
		c.log.Warn().Err(err).Msg("leader could not catch up")
		return
	}
	if c.opts.Advertise != "" {
		if _, err := c.propose(&command{Op: opAnnounce, ControllerID: c.opts.ID, Addr: c.opts.Advertise}); err != nil {
			c.log.Warn().Err(err).Msg("leader could not announce its address")
			return
		}
	}
	c.live.refreshAll(c.fsm.groups(), time.Now(), c.opts.BrokerHeartbeatTimeout)
	c.ready.Store(true)
	c.log.Info().Str("advertise", c.opts.Advertise).Msg("leader ready")
}

// Close stops the leader's duties and the Raft member, and closes the store. A Run in
// progress returns.
func (c *Controller) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
		c.ready.Store(false)
		// Raft first, so that a Run waiting on it (a barrier, a proposal) returns at once.
		raftErr := c.raft.Shutdown().Error()
		c.runs.Wait()
		errs := []error{raftErr, c.transport.Close()}
		if c.store != nil {
			errs = append(errs, c.store.Close())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// IsLeader reports whether this controller is the leader and ready to serve.
func (c *Controller) IsLeader() bool {
	return c.ready.Load() && c.raft.State() == raft.Leader
}

// Leader returns the leader's id and remoting address as far as this controller knows ("" when
// unknown, or when the leader has not announced one yet).
func (c *Controller) Leader() (id, addr string) {
	_, lid := c.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	return string(lid), c.fsm.controllerAddr(string(lid))
}

// peers renders the Raft configuration as RocketMQ's metadata does: "<id>:<address>;" each.
func (c *Controller) peers() string {
	f := c.raft.GetConfiguration()
	if f.Error() != nil {
		return ""
	}
	var b strings.Builder
	for _, s := range f.Configuration().Servers {
		b.WriteString(string(s.ID))
		b.WriteByte(':')
		b.WriteString(string(s.Address))
		b.WriteByte(';')
	}
	return b.String()
}

// Snapshot makes Raft write a snapshot of the state now (raft also takes them on its own
// schedule); a controller restarted on its Dir restores the latest and replays the log after it.
func (c *Controller) Snapshot() error {
	return c.raft.Snapshot().Error()
}

// propose applies a command through Raft and returns the state machine's answer.
func (c *Controller) propose(cmd *command) (applyResult, error) {
	b, err := jsonMarshal(cmd)
	if err != nil {
		return applyResult{}, err
	}
	f := c.raft.Apply(b, c.opts.ApplyTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return applyResult{}, ErrNotLeader
		}
		return applyResult{}, fmt.Errorf("controller: raft apply: %w", err)
	}
	res, _ := f.Response().(applyResult)
	return res, nil
}
