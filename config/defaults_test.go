package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// TestEnsureDefaultsNegative: a negative value of a setting the broker reads is unset, as the
// broker has always taken it, so the node's groups and the broker's own defaults agree; a
// negative replication tuning value stays for internal/replication to refuse by name, and a
// set value is kept.
func TestEnsureDefaultsNegative(t *testing.T) {
	o := Options{
		Limits: Limits{MaxMessageBytes: -1, MaxLongPollingSuspend: -time.Second, MaxHeldPullsPerConnection: -1,
			MaxHeldPulls: -1, MaxQueueNums: -1, MaxTopics: -1, MaxSubscriptionGroups: -1, AutoCreateTopicBurst: -1, AutoCreateTopicRate: -1,
			MaxFrameBytes: 1 << 20},
		Periods: Periods{RegisterNameServerPeriod: -1, RegisterNameServerPeriodMin: -1,
			FlushConsumerOffsetInterval: -1, ClientChannelExpiredTime: -1, RebalanceLockMaxLiveTime: -1},
		Timers:       Timers{Precision: -1, MaxDelay: -1},
		Transactions: Transactions{Timeout: -1, CheckMax: -1, CheckInterval: -1},
		Pop: Pop{ReviveInterval: -1, FromRetryProbability: 101, MaxPollingSize: -1, PollingSize: -1, CkMaxBufferSize: -1,
			MaxInvisibleTime: -1},
		HA: HA{SlaveSyncPeriod: -1, HousekeepingInterval: -time.Second, SyncFlushTimeout: 7 * time.Second},
	}
	o.EnsureDefaults()
	for name, c := range map[string][2]any{
		"Limits.MaxMessageBytes":              {o.Limits.MaxMessageBytes, storage.DefaultMaxMessageBytes},
		"Limits.MaxLongPollingSuspend":        {o.Limits.MaxLongPollingSuspend, DefaultMaxLongPollingSuspend},
		"Limits.MaxHeldPullsPerConnection":    {o.Limits.MaxHeldPullsPerConnection, DefaultMaxHeldPullsPerConnection},
		"Limits.MaxHeldPulls":                 {o.Limits.MaxHeldPulls, DefaultMaxHeldPulls},
		"Limits.MaxQueueNums":                 {o.Limits.MaxQueueNums, int32(route.DefaultMaxQueueNums)},
		"Limits.MaxTopics":                    {o.Limits.MaxTopics, DefaultMaxTopics},
		"Limits.MaxSubscriptionGroups":        {o.Limits.MaxSubscriptionGroups, DefaultMaxSubscriptionGroups},
		"Limits.AutoCreateTopicBurst":         {o.Limits.AutoCreateTopicBurst, DefaultAutoCreateTopicBurst},
		"Limits.AutoCreateTopicRate":          {o.Limits.AutoCreateTopicRate, DefaultAutoCreateTopicRate},
		"Limits.MaxFrameBytes":                {o.Limits.MaxFrameBytes, 1 << 20},
		"Periods.RegisterNameServerPeriod":    {o.Periods.RegisterNameServerPeriod, DefaultRegisterNameServerPeriod},
		"Periods.RegisterNameServerPeriodMin": {o.Periods.RegisterNameServerPeriodMin, DefaultRegisterNameServerPeriodMin},
		"Periods.FlushConsumerOffsetInterval": {o.Periods.FlushConsumerOffsetInterval, DefaultFlushConsumerOffsetInterval},
		"Periods.ClientChannelExpiredTime":    {o.Periods.ClientChannelExpiredTime, DefaultChannelExpiredTimeout},
		"Periods.RebalanceLockMaxLiveTime":    {o.Periods.RebalanceLockMaxLiveTime, DefaultRebalanceLockMaxLiveTime},
		"Timers.Precision":                    {o.Timers.Precision, DefaultTimerPrecision},
		"Timers.MaxDelay":                     {o.Timers.MaxDelay, DefaultTimerMaxDelay},
		"Transactions.Timeout":                {o.Transactions.Timeout, DefaultTransactionTimeout},
		"Transactions.CheckMax":               {o.Transactions.CheckMax, DefaultTransactionCheckMax},
		"Transactions.CheckInterval":          {o.Transactions.CheckInterval, DefaultTransactionCheckInterval},
		"Pop.ReviveInterval":                  {o.Pop.ReviveInterval, DefaultPopReviveInterval},
		"Pop.FromRetryProbability":            {o.Pop.FromRetryProbability, DefaultPopFromRetryProbability},
		"Pop.MaxPollingSize":                  {o.Pop.MaxPollingSize, DefaultPopMaxPollingSize},
		"Pop.PollingSize":                     {o.Pop.PollingSize, DefaultPopPollingSize},
		"Pop.CkMaxBufferSize":                 {o.Pop.CkMaxBufferSize, DefaultPopCkMaxBufferSize},
		"Pop.MaxInvisibleTime":                {o.Pop.MaxInvisibleTime, DefaultPopMaxInvisibleTime},
		"HA.SlaveSyncPeriod":                  {o.HA.SlaveSyncPeriod, DefaultSlaveSyncPeriod},
		"HA.HousekeepingInterval":             {o.HA.HousekeepingInterval, -time.Second},
		"HA.SyncFlushTimeout":                 {o.HA.SyncFlushTimeout, 7 * time.Second},
		"HA.TransferBatchBytes":               {o.HA.TransferBatchBytes, DefaultHATransferBatchBytes},
	} {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
}

// TestBrokerNamesMustMakeTopics: the broker serves topics named after its cluster and itself,
// so names no name server would route are refused with the field named.
func TestBrokerNamesMustMakeTopics(t *testing.T) {
	for _, c := range []struct{ cluster, broker, field string }{
		{"DefaultCluster", "broker.a", "Broker.Name"},
		{"my cluster", "broker-a", "Broker.ClusterName"},
		{strings.Repeat("c", 116), "broker-a", "Broker.ClusterName"}, // + _REPLY_TOPIC is 128 bytes
	} {
		b := Broker{ClusterName: c.cluster, Name: c.broker}
		b.EnsureDefaults()
		if err := b.Validate(false); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("cluster %q broker %q: %v, want an error naming %s", c.cluster, c.broker, err, c.field)
		}
	}
	b := Broker{}
	b.EnsureDefaults()
	if err := b.Validate(false); err != nil {
		t.Errorf("the default names: %v", err)
	}
}

// TestHeldPullsPerConnectionFollowsTheWhole: lowering only MaxHeldPulls lowers the
// per-connection cap with it.
func TestHeldPullsPerConnectionFollowsTheWhole(t *testing.T) {
	l := Limits{MaxHeldPulls: 10}
	l.EnsureDefaults()
	if l.MaxHeldPullsPerConnection != 10 {
		t.Errorf("MaxHeldPullsPerConnection %d with MaxHeldPulls 10, want 10", l.MaxHeldPullsPerConnection)
	}
}
