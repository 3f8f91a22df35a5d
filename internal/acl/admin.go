package acl

import (
	"slices"
	"sync"
	"time"
)

// What RocketMQ's ACL administration reads and changes (UPDATE_AND_CREATE_ACL_CONFIG and the
// other codes of internal/broker/admin/acl.go): the configuration in effect and its data
// version, which counts the configurations put in effect.

// versionState is a Guard's data version.
type versionState struct {
	mu      sync.Mutex // held by Store and Snapshot
	counter int64
	at      time.Time
}

// Snapshot returns a copy of the configuration in effect, how many configurations have been
// put in effect (RocketMQ's DataVersion counter) and when the last one was; ok is false with
// ACL off.
func (g *Guard) Snapshot() (cfg Config, counter int64, at time.Time, ok bool) {
	g.version.mu.Lock()
	defer g.version.mu.Unlock()
	c := g.checker.Load()
	if c == nil {
		return Config{}, 0, time.Time{}, false
	}
	return CloneConfig(&c.cfg), g.version.counter, g.version.at, true
}

// CloneConfig copies cfg, its lists included.
func CloneConfig(cfg *Config) Config {
	out := Config{GlobalWhiteRemoteAddresses: slices.Clone(cfg.GlobalWhiteRemoteAddresses),
		Accounts: slices.Clone(cfg.Accounts)}
	for i := range out.Accounts {
		out.Accounts[i].TopicPerms = slices.Clone(out.Accounts[i].TopicPerms)
		out.Accounts[i].GroupPerms = slices.Clone(out.Accounts[i].GroupPerms)
	}
	return out
}

// sameConfig reports whether two configurations say the same (nil and empty lists alike).
func sameConfig(a, b *Config) bool {
	if !slices.Equal(a.GlobalWhiteRemoteAddresses, b.GlobalWhiteRemoteAddresses) || len(a.Accounts) != len(b.Accounts) {
		return false
	}
	for i := range a.Accounts {
		x, y := &a.Accounts[i], &b.Accounts[i]
		if x.AccessKey != y.AccessKey || x.SecretKey != y.SecretKey || x.WhiteRemoteAddress != y.WhiteRemoteAddress ||
			x.Admin != y.Admin || x.DefaultTopicPerm != y.DefaultTopicPerm || x.DefaultGroupPerm != y.DefaultGroupPerm ||
			!slices.Equal(x.TopicPerms, y.TopicPerms) || !slices.Equal(x.GroupPerms, y.GroupPerms) {
			return false
		}
	}
	return true
}
