package tables

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// syncBuffer is a log sink the broker's goroutines and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMaxSubscriptionGroups: auto-creation and Update create groups until the table holds
// MaxSubscriptionGroups; past it a new group is refused with an error naming the limit (and
// matching ErrTooManyGroups), created nowhere, while existing groups are still found and
// updated, RocketMQ's predefined groups are still created, and a deletion makes room again.
// The refusals are logged once, not once each.
func TestMaxSubscriptionGroups(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(t, t.TempDir())
	cfg.Log = zerolog.New(&logs)
	cfg.MaxSubscriptionGroups = 3
	tb := load(t, cfg)
	g := tb.Groups
	for i := range 3 {
		if _, created, err := g.FindOrAdd(fmt.Sprintf("g%d", i)); !created || err != nil {
			t.Fatalf("group %d of 3: created %v, %v", i, created, err)
		}
	}
	for i := range 100 {
		name := fmt.Sprintf("over%d", i)
		_, err := g.Lookup(name)
		var full *TooManyGroupsError
		if !errors.As(err, &full) || !errors.Is(err, ErrTooManyGroups) || full.Max != 3 || full.Group != name {
			t.Fatalf("group %s past the cap: %v, want a *TooManyGroupsError for it with Max 3", name, err)
		}
		if !strings.Contains(err.Error(), "MaxSubscriptionGroups (3)") || !strings.Contains(err.Error(), name) {
			t.Fatalf("refusal %q does not name the group and the limit", err)
		}
		if _, ok := g.Find(name); ok {
			t.Fatalf("Find created %s past the cap", name)
		}
	}
	if err := g.Update(NewSubscriptionGroupConfig("admin-made")); !errors.Is(err, ErrTooManyGroups) {
		t.Errorf("Update of a new group past the cap: %v, want ErrTooManyGroups", err)
	}
	if n := g.Count(); n != 3 {
		t.Errorf("the table holds %d groups, want 3", n)
	}
	if n := strings.Count(logs.String(), "subscription group table full"); n != 1 {
		t.Errorf("%d warnings for 102 refusals, want 1 (one a RefusalLogPeriod):\n%s", n, logs.String())
	}

	// Existing groups are never refused, neither found nor replaced.
	if _, err := g.Lookup("g1"); err != nil {
		t.Errorf("existing group past the cap: %v", err)
	}
	c := NewSubscriptionGroupConfig("g1")
	c.RetryMaxTimes = 3
	if err := g.Update(c); err != nil {
		t.Errorf("Update of an existing group: %v", err)
	}
	// System groups are never refused.
	for _, sys := range []string{"TOOLS_CONSUMER", "CID_RMQ_SYS_TRANS"} {
		if _, err := g.Lookup(sys); err != nil {
			t.Errorf("system group %s refused: %v", sys, err)
		}
	}
	// But a name that only looks like one is.
	if _, err := g.Lookup("CID_RMQ_SYS_MADE_UP"); !errors.Is(err, ErrTooManyGroups) {
		t.Errorf("CID_RMQ_SYS_MADE_UP past the cap: %v, want ErrTooManyGroups", err)
	}
	// A deletion makes room for one.
	g.Delete("g0")
	if _, err := g.Lookup("after-delete"); err != nil {
		t.Errorf("a new group after a deletion: %v", err)
	}
	if _, err := g.Lookup("after-delete-2"); !errors.Is(err, ErrTooManyGroups) {
		t.Errorf("a second new group after one deletion: %v, want ErrTooManyGroups", err)
	}

	// With auto-creation off an unknown group is ErrGroupNotExist, whatever the table holds.
	cfg.DisableAutoCreateSubscriptionGroup = true
	off := load(t, cfg)
	if _, err := off.Groups.Lookup("never"); !errors.Is(err, ErrGroupNotExist) {
		t.Errorf("unknown group with auto-creation off: %v, want ErrGroupNotExist", err)
	}
}

// TestGroupsLoadedPastTheCap: a subscriptionGroup.json holding more groups than
// MaxSubscriptionGroups (written under a higher limit) loads whole, with a warning, and no
// group can be created until enough are deleted.
func TestGroupsLoadedPastTheCap(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	tb := load(t, cfg)
	for i := range 5 {
		if _, err := tb.Groups.Lookup(fmt.Sprintf("g%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Writer.FlushAll(); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cfg.Log = zerolog.New(&logs)
	cfg.MaxSubscriptionGroups = 2
	tb2 := load(t, cfg)
	if n := tb2.Groups.Count(); n != 5 {
		t.Fatalf("%d groups loaded, want the 5 on disk", n)
	}
	if !strings.Contains(logs.String(), "more subscription groups loaded than MaxSubscriptionGroups") {
		t.Errorf("no warning about the groups past the cap:\n%s", logs.String())
	}
	if _, err := tb2.Groups.Lookup("new"); !errors.Is(err, ErrTooManyGroups) {
		t.Errorf("new group with 5 held and MaxSubscriptionGroups 2: %v", err)
	}
}

// TestSlaveRefusesTooManyGroups: a master's group table above MaxSubscriptionGroups (and the
// system groups' allowance) is not installed and the slave keeps what it held; one within it
// is installed whole, even above what the slave could auto-create.
func TestSlaveRefusesTooManyGroups(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.MaxSubscriptionGroups = 10
	tb := load(t, cfg)
	if _, err := tb.Groups.Lookup("local"); err != nil {
		t.Fatal(err)
	}
	master := func(n, counter int) SubscriptionGroupWrapper {
		w := SubscriptionGroupWrapper{SubscriptionGroupTable: map[string]SubscriptionGroupConfig{},
			DataVersion: route.DataVersion{Timestamp: 1, Counter: int64(counter)}}
		for i := range n {
			name := fmt.Sprintf("m%d", i)
			w.SubscriptionGroupTable[name] = NewSubscriptionGroupConfig(name)
		}
		return w
	}
	tooMany := master(10+len(systemGroups)+1, 1)
	if err := tb.Groups.InstallMaster(tooMany); err == nil || !strings.Contains(err.Error(), "MaxSubscriptionGroups") {
		t.Errorf("install of %d groups: %v, want an error naming MaxSubscriptionGroups", len(tooMany.SubscriptionGroupTable), err)
	}
	if _, ok := tb.Groups.Get("local"); !ok || tb.Groups.Count() != 1 {
		t.Errorf("the slave holds %d groups after a refused install, want its 1", tb.Groups.Count())
	}
	fits := master(10+len(systemGroups), 2)
	if err := tb.Groups.InstallMaster(fits); err != nil {
		t.Errorf("install of %d groups: %v", len(fits.SubscriptionGroupTable), err)
	}
	if n := tb.Groups.Count(); n != len(fits.SubscriptionGroupTable) {
		t.Errorf("the slave holds %d groups, want the master's %d", n, len(fits.SubscriptionGroupTable))
	}
}
