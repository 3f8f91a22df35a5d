package tables

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// testConfig is the tables' config of a broker with the default settings whose config
// directory is dir.
func testConfig(t testing.TB, dir string) Config {
	return Config{
		Log:                   zerolog.New(zerolog.NewTestWriter(t)).With().Str("component", "broker").Logger(),
		Path:                  func(name string) string { return filepath.Join(dir, name) },
		ClusterName:           config.DefaultClusterName,
		BrokerName:            config.DefaultBrokerName,
		DefaultTopicQueueNums: 8,
		MaxTopics:             config.DefaultMaxTopics,
		MaxQueueNums:          route.DefaultMaxQueueNums,
		MaxSubscriptionGroups: config.DefaultMaxSubscriptionGroups,
		FlushInterval:         config.DefaultFlushConsumerOffsetInterval,
		TopicWriteWait:        time.Minute,
	}
}

// load loads the tables of cfg and fails the test on an error.
func load(t testing.TB, cfg Config) *Tables {
	t.Helper()
	tb, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// Two tables started on empty stores must not report the same topic-table version: the name
// server keeps a broker's routes when a registration repeats the version it holds, so a broker
// that came back on the same address with a fresh store would keep serving its old routes.
func TestFreshTopicTableVersionCarriesBirthTime(t *testing.T) {
	before := time.Now().UnixMilli()
	tb := load(t, testConfig(t, t.TempDir()))
	v := tb.Topics.Snapshot().DataVersion
	if v.Timestamp < before || v.Timestamp > time.Now().UnixMilli() {
		t.Fatalf("fresh table version %+v, want its timestamp the start time (>= %d)", v, before)
	}
}

// What FlushAll writes, the next Load reads: topics, groups and offsets, with their versions;
// the system topics are there from the start, TBW102 only while auto-creation is on.
func TestFlushAllThenLoad(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	tb := load(t, cfg)
	for _, sys := range []string{names.TopicAutoCreate, cfg.ClusterName, cfg.BrokerName, names.TopicSchedule} {
		if _, ok := tb.Topics.Get(sys); !ok {
			t.Errorf("system topic %s missing", sys)
		}
	}
	if err := tb.Topics.Update(route.TopicConfig{TopicName: "Kept", ReadQueueNums: 2, WriteQueueNums: 3, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Groups.Find("g"); !ok {
		t.Fatal("group g not auto-created")
	}
	tb.Offsets.Commit("g", "Kept", 1, 42)
	topics, groups := tb.Topics.Snapshot().DataVersion, tb.Groups.Snapshot().DataVersion
	if err := tb.Writer.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if w, g, o := tb.Writer.FileWrites(); w != 1 || g != 1 || o != 1 {
		t.Errorf("FlushAll wrote topics %d, groups %d, offsets %d times; want once each", w, g, o)
	}

	cfg.DisableAutoCreateTopic, cfg.DisableAutoCreateSubscriptionGroup = true, true
	tb2 := load(t, cfg)
	if tc, ok := tb2.Topics.Get("Kept"); !ok || tc.WriteQueueNums != 3 || tc.TopicFilterType != route.FilterSingleTag {
		t.Errorf("Kept after reload: %+v %v", tc, ok)
	}
	if _, ok := tb2.Topics.Get(names.TopicAutoCreate); ok {
		t.Error("TBW102 kept with auto-creation off")
	}
	if _, ok := tb2.Groups.Find("g"); !ok {
		t.Error("group g lost")
	}
	if _, ok := tb2.Groups.Find("other"); ok {
		t.Error("group created with auto-creation off")
	}
	if off := tb2.Offsets.Query("g", "Kept", 1); off != 42 {
		t.Errorf("offset after reload %d, want 42", off)
	}
	if v := tb2.Topics.Snapshot().DataVersion; v != topics {
		t.Errorf("topics version after reload %+v, want %+v", v, topics)
	}
	if v := tb2.Groups.Snapshot().DataVersion; v != groups {
		t.Errorf("groups version after reload %+v, want %+v", v, groups)
	}
}

// A queue count above MaxQueueNums on disk is clamped at load and written back; so is a
// group's retryQueueNums.
func TestLoadClampsQueueNums(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	tb := load(t, cfg)
	if err := tb.Topics.Update(route.TopicConfig{TopicName: "Huge", ReadQueueNums: 5000, WriteQueueNums: 2, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	gc := NewSubscriptionGroupConfig("g")
	gc.RetryQueueNums = 1 << 20
	tb.Groups.Update(gc)
	if err := tb.Writer.FlushAll(); err != nil {
		t.Fatal(err)
	}
	tb2 := load(t, cfg)
	if tc, _ := tb2.Topics.Get("Huge"); tc.ReadQueueNums != cfg.MaxQueueNums || tc.WriteQueueNums != 2 {
		t.Errorf("Huge loaded as %+v, want read queues clamped to %d", tc, cfg.MaxQueueNums)
	}
	if gc, _ := tb2.Groups.Get("g"); gc.RetryQueueNums != cfg.MaxQueueNums {
		t.Errorf("group loaded with retryQueueNums %d", gc.RetryQueueNums)
	}
}

// TestOffsetsSlowest: the store's ConsumedOffsets is, per topic and queue, the lowest offset of
// every group that committed one; a queue only one group committed keeps that group's.
func TestOffsetsSlowest(t *testing.T) {
	tb := load(t, testConfig(t, t.TempDir()))
	tb.Offsets.Commit("g1", "T", 0, 10)
	tb.Offsets.Commit("g2", "T", 0, 4)
	tb.Offsets.Commit("g2", "T", 1, 7)
	tb.Offsets.Commit("g1", "U", 3, 2)
	want := map[string]map[int32]int64{"T": {0: 4, 1: 7}, "U": {3: 2}}
	if diff := cmp.Diff(want, tb.Offsets.Slowest()); diff != "" {
		t.Errorf("Slowest (-want +got):\n%s", diff)
	}
}

// A topic change made after Writer.Start and before Run's goroutine has run waits for the pass
// that writes it: the broker takes requests from Register on, before Run starts the writer, and
// a topic answered before it was on disk was lost to a SIGKILL in CI.
func TestChangeAfterStartWaitsForTheFirstPass(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		tb := load(t, testConfig(t, dir))
		tb.Writer.Start()
		var answered atomic.Bool
		go func() {
			if err := tb.Topics.Update(route.TopicConfig{TopicName: "Early", ReadQueueNums: 1, WriteQueueNums: 1,
				Perm: route.PermReadWrite}); err != nil {
				t.Error(err)
			}
			answered.Store(true)
		}()
		synctest.Wait()
		if answered.Load() {
			t.Fatal("the change was answered before any writer pass")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tb.Writer.Run(ctx) }()
		synctest.Wait()
		if !answered.Load() {
			t.Fatal("the change is still waiting after the writer's first pass")
		}
		if _, ok := load(t, testConfig(t, dir)).Topics.Snapshot().TopicConfigTable["Early"]; !ok {
			t.Error("the answered topic is not on disk")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
