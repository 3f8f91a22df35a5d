package storage

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/mqgo/mq/internal/names"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
)

func TestAppendReadAcrossSegmentRolls(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	runStore(t, s)
	rng := rand.New(rand.NewPCG(1, 2))
	type key struct {
		topic string
		qid   int32
	}
	want := map[key][]string{}
	topics := []string{"TopicA", "TopicB", "%RETRY%group"}
	var lastPhy int64 = -1
	for i := range 1500 {
		k := key{topics[rng.IntN(len(topics))], int32(rng.IntN(4))}
		b := body(i, rng.IntN(600))
		r := mustPut(t, s, testMsg(k.topic, k.qid, b, map[string]string{"TAGS": "t"}))
		if r.QueueOffset != int64(len(want[k])) {
			t.Fatalf("message %d: queue offset %d, want %d", i, r.QueueOffset, len(want[k]))
		}
		if r.PhyOffset <= lastPhy {
			t.Fatalf("physical offsets not increasing: %d after %d", r.PhyOffset, lastPhy)
		}
		lastPhy = r.PhyOffset
		want[k] = append(want[k], b)
	}
	if n := s.cl.segs.len(); n < 10 {
		t.Fatalf("only %d segments: rolls not exercised", n)
	}
	waitDispatched(t, s)
	check := func(s *Store) {
		t.Helper()
		for k, bodies := range want {
			recs := readAll(t, s, k.topic, k.qid)
			if len(recs) != len(bodies) {
				t.Fatalf("%v: %d messages, want %d", k, len(recs), len(bodies))
			}
			for i, rec := range recs {
				if rec.QueueOffset != int64(i) || string(rec.Body) != bodies[i] || string(rec.Topic) != k.topic || rec.QueueID != k.qid {
					t.Fatalf("%v[%d]: got offset %d body %.20q", k, i, rec.QueueOffset, rec.Body)
				}
				if rec.StoreHost != testStoreHost || rec.BornHost != testBornHost {
					t.Fatalf("hosts %v %v", rec.StoreHost, rec.BornHost)
				}
			}
			if got := s.MaxOffsetInQueue(k.topic, k.qid); got != int64(len(bodies)) {
				t.Fatalf("%v: max offset %d", k, got)
			}
		}
	}
	check(s)
	maxPhy := s.MaxPhyOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "abort")); !os.IsNotExist(err) {
		t.Fatalf("abort marker left after Close: %v", err)
	}
	s2 := openStore(t, opts)
	rep := s2.RecoveryReport()
	if !rep.Clean || rep.ScannedFrom != -1 || rep.TruncatedAt != -1 || len(rep.Actions) != 0 {
		t.Fatalf("clean reopen report: %+v", rep)
	}
	if s2.MaxPhyOffset() != maxPhy {
		t.Fatalf("max phy offset %d after reopen, want %d", s2.MaxPhyOffset(), maxPhy)
	}
	check(s2)
	// Appends continue each queue where it ended.
	r := mustPut(t, s2, testMsg("TopicA", 0, "after", nil))
	if r.QueueOffset != int64(len(want[key{"TopicA", 0}])) {
		t.Fatalf("queue offset after reopen %d", r.QueueOffset)
	}
}

func TestConcurrentAppenders(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	runStore(t, s)
	const writers, each = 8, 150
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := testMsg("Shared", 0, fmt.Sprintf("w%d-%d", w, i), nil)
				if _, err := s.PutMessage(m); err != nil {
					t.Error(err)
					return
				}
				m = testMsg("Own", int32(w), fmt.Sprintf("w%d-%d", w, i), nil)
				if _, err := s.PutMessage(m); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	waitDispatched(t, s)
	recs := readAll(t, s, "Shared", 0)
	if len(recs) != writers*each {
		t.Fatalf("%d messages, want %d", len(recs), writers*each)
	}
	seen := map[string]bool{}
	next := map[int]int{}
	for i, r := range recs {
		if r.QueueOffset != int64(i) {
			t.Fatalf("offset %d at position %d", r.QueueOffset, i)
		}
		b := string(r.Body)
		if seen[b] {
			t.Fatalf("duplicate %s", b)
		}
		seen[b] = true
		var w, n int
		fmt.Sscanf(b, "w%d-%d", &w, &n)
		if next[w] != n {
			t.Fatalf("writer %d: message %d before %d", w, n, next[w])
		}
		next[w]++
	}
	for w := range writers {
		if got := len(readAll(t, s, "Own", int32(w))); got != each {
			t.Fatalf("queue %d: %d messages", w, got)
		}
	}
}

type tagFilter struct{ codes map[int64]bool }

func (f tagFilter) IsMatchedByConsumeQueue(c int64) bool { return f.codes[c] }
func (f tagFilter) IsMatchedByCommitLog(b []byte) bool {
	var r message.Record
	if _, err := message.DecodeRecord(b, &r, false); err != nil {
		return false
	}
	v, _ := message.PropertyValue(r.Properties, "TAGS")
	return string(v) == "TagA" || string(v) == "é"
}

func TestTagFiltering(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	runStore(t, s)
	tags := []string{"TagA", "TagB", "é", "TagC"}
	for i := range 200 {
		mustPut(t, s, testMsg("T", 0, body(i, 10), map[string]string{"TAGS": tags[i%4]}))
	}
	waitDispatched(t, s)
	u, err := s.cqs.get("T", 0).unit(2)
	if err != nil || u.TagsCode != 233 {
		t.Fatalf("tag code of é = %d (%v), want Java's 233", u.TagsCode, err)
	}
	f := tagFilter{codes: map[int64]bool{message.TagsHashCode("TagA"): true, message.TagsHashCode("é"): true}}
	var got []int64
	off := int64(0)
	for {
		r := s.GetMessage("g", "T", 0, off, 7, 0, f)
		st := r.Status
		got = append(got, r.QueueOffsets...)
		if r.NextBeginOffset <= off && st != OffsetOverflowOne {
			t.Fatalf("no progress at %d: %v", off, st)
		}
		off = r.NextBeginOffset
		r.Release()
		if st == OffsetOverflowOne {
			break
		}
		if st != Found && st != NoMatchedMessage {
			t.Fatalf("status %v", st)
		}
	}
	if len(got) != 100 {
		t.Fatalf("%d matched, want 100", len(got))
	}
	for _, o := range got {
		if o%4 != 0 && o%4 != 2 {
			t.Fatalf("offset %d does not match the filter", o)
		}
	}
	// Only non-matching messages in range: NO_MATCHED_MESSAGE, next offset after them.
	none := tagFilter{codes: map[int64]bool{}}
	r := s.GetMessage("g", "T", 0, 0, 32, 0, none)
	defer r.Release()
	if r.Status != NoMatchedMessage || r.NextBeginOffset <= 0 || len(r.Messages) != 0 {
		t.Fatalf("no-match: %v next %d", r.Status, r.NextBeginOffset)
	}
}

func TestGetMessageStatuses(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	runStore(t, s)
	for i := range 10 {
		mustPut(t, s, testMsg("T", 1, body(i, 10), nil))
	}
	waitDispatched(t, s)
	cases := []struct {
		name     string
		topic    string
		qid      int32
		off      int64
		want     GetStatus
		wantNext int64
		wantN    int
	}{
		{"found", "T", 1, 3, Found, 8, 5},
		{"no logic queue", "X", 0, 5, NoMatchedLogicQueue, 0, 0},
		{"overflow one", "T", 1, 10, OffsetOverflowOne, 10, 0},
		{"overflow badly, min 0", "T", 1, 15, OffsetOverflowBadly, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.GetMessage("g", c.topic, c.qid, c.off, 5, 0, nil)
			defer r.Release()
			if r.Status != c.want || r.NextBeginOffset != c.wantNext || len(r.Messages) != c.wantN {
				t.Fatalf("status %v next %d n %d; want %v %d %d", r.Status, r.NextBeginOffset, len(r.Messages), c.want, c.wantNext, c.wantN)
			}
			if c.want != NoMatchedLogicQueue && (r.MinOffset != 0 || r.MaxOffset != 10) {
				t.Fatalf("min %d max %d", r.MinOffset, r.MaxOffset)
			}
		})
	}
	// maxMsgs <= 0 returns one; maxBytes smaller than a record still returns one.
	r := s.GetMessage("g", "T", 1, 0, 0, 1, nil)
	if r.Status != Found || len(r.Messages) != 1 || r.NextBeginOffset != 1 {
		t.Fatalf("maxMsgs 0: %v %d", r.Status, len(r.Messages))
	}
	r.Release()
	// Empty queue: the queue exists once a unit was ever written; simulate with a new queue
	// whose only message is a prepared transaction (no unit): still no logic queue.
	m := testMsg("Half", 0, "x", nil)
	m.SysFlag = message.TransactionPreparedType
	pr := mustPut(t, s, m)
	if pr.QueueOffset != 0 {
		t.Fatalf("prepared message queue offset %d", pr.QueueOffset)
	}
	waitDispatched(t, s)
	if got := s.MaxOffsetInQueue("Half", 0); got != 0 {
		t.Fatalf("prepared message dispatched: max %d", got)
	}
	// Slave without offset check echoes the requested offset.
	s.opts.Slave = true
	r = s.GetMessage("g", "T", 1, 15, 5, 0, nil)
	if r.Status != OffsetOverflowBadly || r.NextBeginOffset != 15 {
		t.Fatalf("slave: %v next %d", r.Status, r.NextBeginOffset)
	}
	r.Release()
	s.opts.Slave = false
}

func TestBatchAppend(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	runStore(t, s)
	mustPut(t, s, testMsg("B", 2, "first", nil))
	var batch []*Message
	for i := range 20 {
		batch = append(batch, testMsg("B", 2, body(i, 50), map[string]string{"KEYS": fmt.Sprintf("k%d", i)}))
	}
	r, err := s.PutMessages(batch)
	if err != nil || r.QueueOffset != 1 || r.Count != 20 {
		t.Fatalf("batch: %+v %v", r, err)
	}
	ids := strings.Split(r.MsgIDs(), ",")
	if len(ids) != 20 {
		t.Fatalf("%d msg ids", len(ids))
	}
	waitDispatched(t, s)
	recs := readAll(t, s, "B", 2)
	if len(recs) != 21 {
		t.Fatalf("%d records", len(recs))
	}
	for i, rec := range recs[1:] {
		if rec.QueueOffset != int64(i+1) || string(rec.Body) != body(i, 50) {
			t.Fatalf("batch element %d: offset %d", i, rec.QueueOffset)
		}
		host, phy, err := message.ParseOffsetMsgID(ids[i])
		if err != nil || host != testStoreHost || phy != rec.PhysicalOffset {
			t.Fatalf("msg id %s: %v %d %v (record at %d)", ids[i], host, phy, err, rec.PhysicalOffset)
		}
	}
	if _, err := s.PutMessages([]*Message{testMsg("B", 2, "x", nil), testMsg("B", 3, "y", nil)}); !errors.Is(err, ErrIllegalMessage) {
		t.Fatalf("mixed batch: %v", err)
	}
}

func TestRefusedMessages(t *testing.T) {
	opts := testOptions(t, "")
	opts.MaxMessageBytes = 1000
	s := openStore(t, opts)
	cases := []struct {
		name string
		m    *Message
		st   PutStatus
		err  error
	}{
		{"body too large", testMsg("T", 0, strings.Repeat("x", 1001), nil), MessageIllegal, ErrMessageTooLarge},
		{"properties too large", &Message{Topic: "T", Properties: strings.Repeat("p", 32768)}, PropertiesSizeExceeded, ErrPropertiesTooLarge},
		{"topic too long", testMsg(strings.Repeat("t", 128), 0, "x", nil), MessageIllegal, ErrIllegalMessage},
		{"empty topic", testMsg("", 0, "x", nil), MessageIllegal, ErrIllegalMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.PutMessage(c.m)
			if r.Status != c.st || !errors.Is(err, c.err) {
				t.Fatalf("status %v err %v; want %v %v", r.Status, err, c.st, c.err)
			}
		})
	}
	// A record that fits the body limit but not a segment.
	opts2 := testOptions(t, "")
	s2 := openStore(t, opts2)
	if r, err := s2.PutMessage(testMsg("T", 0, strings.Repeat("x", testSegBytes), nil)); r.Status != MessageIllegal || !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("segment-sized: %v %v", r.Status, err)
	}
	if s.MaxPhyOffset() != 0 {
		t.Fatalf("refused messages were written")
	}
}

func TestSearchByTimestamp(t *testing.T) {
	opts := testOptions(t, "")
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts.clock = clk.now
	s := openStore(t, opts)
	runStore(t, s)
	start := clk.now().UnixMilli()
	for i := range 300 {
		mustPut(t, s, testMsg("T", 0, body(i, 100), nil))
		clk.advance(10 * time.Millisecond)
	}
	waitDispatched(t, s)
	for _, c := range []struct {
		ts   int64
		want int64
	}{
		{0, 0}, {start, 0}, {start + 1, 1}, {start + 10, 1}, {start + 1500, 150},
		{start + 2995, 300}, {start + 2990, 299}, {start + 1_000_000, 300},
	} {
		if got := s.GetOffsetInQueueByTime("T", 0, c.ts); got != c.want {
			t.Errorf("offset by time %d: %d, want %d", c.ts-start, got, c.want)
		}
	}
	if ts, err := s.GetEarliestMessageTime("T", 0); err != nil || ts != start {
		t.Fatalf("earliest %d %v", ts, err)
	}
	if ts, err := s.EarliestMessageTime(); err != nil || ts != start {
		t.Fatalf("store earliest %d %v", ts, err)
	}
	if ts, err := s.GetMessageStoreTimestamp("T", 0, 7); err != nil || ts != start+70 {
		t.Fatalf("store ts of 7: %d %v", ts, err)
	}
}

func TestQueryMessageByKey(t *testing.T) {
	opts := testOptions(t, "")
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts.clock = clk.now
	s := openStore(t, opts)
	runStore(t, s)
	start := clk.now().UnixMilli()
	// More messages than one index file holds (MaxIndexNum 500), with 3 keys each.
	for i := range 400 {
		props := map[string]string{
			"KEYS":     fmt.Sprintf("order-%d shared-%d", i, i%10),
			"UNIQ_KEY": fmt.Sprintf("UNIQ%06d", i),
		}
		mustPut(t, s, testMsg("Orders", int32(i%2), body(i, 20), props))
		mustPut(t, s, testMsg("Other", 0, body(i, 20), props))
		clk.advance(time.Second)
	}
	waitDispatched(t, s)
	if n := len(s.idx.files); n < 2 {
		t.Fatalf("%d index files: roll not exercised", n)
	}
	end := clk.now().UnixMilli()
	get := func(key string, max int, b, e int64) []string {
		res, err := s.QueryMessage("Orders", key, max, b, e)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range res.Messages {
			var r message.Record
			message.DecodeRecord(m, &r, true)
			if string(r.Topic) != "Orders" {
				t.Fatalf("topic %s", r.Topic)
			}
			out = append(out, string(r.Body[:6]))
		}
		return out
	}
	if got := get("order-123", 10, start, end); !cmp.Equal(got, []string{"000123"}) {
		t.Fatalf("order-123: %v", got)
	}
	if got := get("UNIQ000321", 10, start, end); !cmp.Equal(got, []string{"000321"}) {
		t.Fatalf("uniq: %v", got)
	}
	if got := get("shared-3", 100, start, end); len(got) != 40 {
		t.Fatalf("shared-3: %d hits", len(got))
	}
	if got := get("shared-3", 5, start, end); len(got) != 5 {
		t.Fatalf("shared-3 max 5: %d hits", len(got))
	}
	// Time range: messages 100..199 were stored in [start+100s, start+199s].
	if got := get("shared-3", 100, start+100_000, start+199_000); len(got) != 10 {
		t.Fatalf("shared-3 in range: %d hits %v", len(got), got)
	}
	if got := get("nope", 10, start, end); len(got) != 0 {
		t.Fatalf("nope: %v", got)
	}
	// VIEW_MESSAGE_BY_ID path.
	phy, err := s.GetCommitLogOffsetInQueue("Orders", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.LookMessageByOffset(phy)
	if err != nil {
		t.Fatal(err)
	}
	var r message.Record
	if _, err := message.DecodeRecord(b, &r, true); err != nil || r.QueueOffset != 3 || r.QueueID != 1 {
		t.Fatalf("look: %v %+v", err, r)
	}
	if _, err := s.LookMessageByOffset(phy + 1); err == nil {
		t.Fatalf("look at a non-record offset succeeded")
	}
}

func TestCreateSegmentFailureKeepsStoreReadable(t *testing.T) {
	opts := testOptions(t, "")
	ops := defaultFileOps()
	var fail bool
	var mu sync.Mutex
	alloc := ops.allocate
	ops.allocate = func(f *os.File, off, n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if fail && strings.Contains(f.Name(), "commitlog") {
			return fmt.Errorf("fallocate: %w", errNoSpace)
		}
		return alloc(f, off, n)
	}
	mapRegion := ops.mmap
	ops.mmap = func(f *os.File, size int) (mmap.MMap, error) {
		mu.Lock()
		m := mapRegion
		mu.Unlock()
		return m(f, size)
	}
	opts.ops = ops
	s := openStore(t, opts)
	runStore(t, s)
	n := 0
	for s.cl.segs.len() < 2 {
		mustPut(t, s, testMsg("T", 0, body(n, 1000), nil))
		n++
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	var err error
	var r PutResult
	for range 200 {
		if r, err = s.PutMessage(testMsg("T", 0, body(n, 1000), nil)); err != nil {
			break
		}
		n++
	}
	if r.Status != CreateMappedFileFailed || !errors.Is(err, ErrCreateSegment) || !errors.Is(err, errNoSpace) {
		t.Fatalf("full disk: status %v err %v", r.Status, err)
	}
	waitDispatched(t, s)
	if got := len(readAll(t, s, "T", 0)); got != n {
		t.Fatalf("readable %d, want %d", got, n)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	r = mustPut(t, s, testMsg("T", 0, "after", nil))
	if r.QueueOffset != int64(n) {
		t.Fatalf("queue offset after recovery %d, want %d", r.QueueOffset, n)
	}
	// A failed mmap is reported the same way (replaced under mu: the allocator maps too).
	mu.Lock()
	mapRegion = func(*os.File, int) (mmap.MMap, error) { return nil, errors.New("mmap: cannot allocate memory") }
	mu.Unlock()
	for range 200 {
		if r, err = s.PutMessage(testMsg("T", 0, body(n, 1000), nil)); err != nil {
			break
		}
	}
	if r.Status != CreateMappedFileFailed {
		t.Fatalf("failed mmap: %v %v", r.Status, err)
	}
}

var errNoSpace = errors.New("no space left on device")

func TestAppendRawReplication(t *testing.T) {
	master := openStore(t, testOptions(t, ""))
	runStore(t, master)
	slaveOpts := testOptions(t, "")
	slaveOpts.Slave = true
	slave := openStore(t, slaveOpts)
	runStore(t, slave)
	for i := range 400 {
		mustPut(t, master, testMsg("R", int32(i%3), body(i, 300), map[string]string{"KEYS": fmt.Sprintf("key%d", i)}))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for off := int64(0); off < master.MaxPhyOffset(); {
		v, err := master.ReadCommitLog(off, 1+rng.IntN(5000))
		if err != nil {
			t.Fatal(err)
		}
		if err := slave.AppendRaw(off, v.Data); err != nil {
			t.Fatal(err)
		}
		off += int64(len(v.Data))
		v.Release()
	}
	if r, err := slave.PutMessage(testMsg("R", 0, "x", nil)); r.Status != ServiceNotAvailable || !errors.Is(err, ErrSlave) {
		t.Fatalf("put on a slave: %v %v", r.Status, err)
	}
	if err := slave.AppendRaw(5, []byte("x")); !errors.Is(err, ErrOffsetMismatch) {
		t.Fatalf("append at wrong offset: %v", err)
	}
	waitDispatched(t, master)
	waitDispatched(t, slave)
	for q := range int32(3) {
		a, b := readAll(t, master, "R", q), readAll(t, slave, "R", q)
		if diff := cmp.Diff(len(a), len(b)); diff != "" || len(a) == 0 {
			t.Fatalf("queue %d: %d vs %d", q, len(a), len(b))
		}
		for i := range a {
			if a[i].PhysicalOffset != b[i].PhysicalOffset || !bytes.Equal(a[i].Body, b[i].Body) {
				t.Fatalf("queue %d message %d differs", q, i)
			}
		}
	}
	res, err := slave.QueryMessage("R", "key77", 5, 0, 1<<62)
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("slave index: %d %v", len(res.Messages), err)
	}
}

func TestDeleteTopicsAndQueues(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	runStore(t, s)
	for i := range 10 {
		mustPut(t, s, testMsg("Keep", int32(i%2), "x", nil))
		mustPut(t, s, testMsg("Drop", int32(i%3), "x", nil))
	}
	waitDispatched(t, s)
	want := []QueueInfo{{"Drop", 0, 0, 4}, {"Drop", 1, 0, 3}, {"Drop", 2, 0, 3}, {"Keep", 0, 0, 5}, {"Keep", 1, 0, 5}}
	if diff := cmp.Diff(want, s.Queues()); diff != "" {
		t.Fatalf("queues (-want +got):\n%s", diff)
	}
	if err := s.DeleteTopics("Drop"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[3:], s.Queues()); diff != "" {
		t.Fatalf("after delete (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(s.opts.Dir, "consumequeue", "Drop")); !os.IsNotExist(err) {
		t.Fatalf("Drop directory still there: %v", err)
	}
	r := mustPut(t, s, testMsg("Drop", 0, "again", nil))
	if r.QueueOffset != 0 {
		t.Fatalf("recreated topic starts at %d", r.QueueOffset)
	}
}

// TestDispatchListener: each append wakes the dispatcher, which reports the unit it wrote. In a
// synctest bubble no time passes, so the hour-long fallback poll cannot be what dispatched.
func TestDispatchListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := testOptions(t, "")
		events := make(chan DispatchEvent, 100)
		opts.OnDispatch = func(e DispatchEvent) { events <- e }
		opts.dispatchPoll = time.Hour // only the append's wake-up can make this test pass
		s := openStore(t, opts)
		runStoreInBubble(t, s)
		start := time.Now()
		for i := range 5 {
			r := mustPut(t, s, testMsg("L", 1, "x", map[string]string{"TAGS": "TagA"}))
			synctest.Wait()
			select {
			case e := <-events:
				if e.Topic != "L" || e.QueueID != 1 || e.QueueOffset != int64(i) || e.TagsCode != 2598919 || e.PhyOffset != r.PhyOffset {
					t.Fatalf("event %+v", e)
				}
			default:
				t.Fatal("no dispatch event once the dispatcher was idle")
			}
		}
		if got := time.Since(start); got != 0 {
			t.Fatalf("%v of fake time passed: a poll, not the wake-up, may have dispatched", got)
		}
	})
}

func TestMetaFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "topics.json")
	type cfg struct{ Topics map[string]int }
	var got cfg
	if _, err := ReadJSONFile(path, &got); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if err := WriteJSONFile(path, cfg{map[string]int{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSONFile(path, cfg{map[string]int{"a": 2}}); err != nil {
		t.Fatal(err)
	}
	if bak, err := ReadJSONFile(path, &got); err != nil || bak || got.Topics["a"] != 2 {
		t.Fatalf("read: %v %v %+v", bak, err, got)
	}
	os.WriteFile(path, []byte(`{"Topics": {"a": `), 0o644) // damaged
	got = cfg{}
	bak, err := ReadJSONFile(path, &got)
	if err != nil || !bak || got.Topics["a"] != 1 {
		t.Fatalf("fallback to .bak: %v %v %+v", bak, err, got)
	}
	os.WriteFile(path+".bak", []byte(`garbage`), 0o644)
	if _, err := ReadJSONFile(path, &got); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("both damaged: %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	_, err := Open(Options{SegmentBytes: 1000, ConsumeQueueUnits: -1, DeleteWhen: "25", DiskMaxUsedSpaceRatio: 101})
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"Dir", "SegmentBytes", "ConsumeQueueUnits", "DeleteWhen", "DiskMaxUsedSpaceRatio"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s: %v", want, err)
		}
	}
	o := Options{Dir: "x"}.withDefaults()
	if o.SegmentBytes != 1<<30 || o.ConsumeQueueUnits != 300000 || o.FlushIntervalCommitLog != 500*time.Millisecond ||
		o.SyncFlushTimeout != 5*time.Second || o.MaxMessageBytes != 4<<20 || o.FileReservedTime != 72*time.Hour ||
		o.DeleteWhen != "04" || o.DiskMaxUsedSpaceRatio != 75 || o.DisableCRCOnRecover {
		t.Fatalf("defaults: %+v", o)
	}
}

func TestLifecycle(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	if _, err := Open(opts); err == nil {
		t.Fatal("second store opened the same directory")
	}
	runStore(t, s)
	mustPut(t, s, testMsg("T", 0, "x", nil))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.PutMessage(testMsg("T", 0, "x", nil)); !errors.Is(err, ErrClosed) || r.Status != ServiceNotAvailable {
		t.Fatalf("put after close: %v %v", r.Status, err)
	}
	if err := s.Run(t.Context()); err == nil {
		t.Fatal("Run after Close succeeded")
	}
	r := s.GetMessage("g", "T", 0, 0, 1, 0, nil)
	r.Release()
}

func TestIPv6HostsAndScheduleTagsCode(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	runStore(t, s)
	m := testMsg("V6", 0, "hello", nil)
	m.StoreHost = netip.MustParseAddrPort("[2001:db8::10]:10911")
	m.BornHost = netip.MustParseAddrPort("[2001:db8::20]:50000")
	r := mustPut(t, s, m)
	id := r.MsgID()
	if len(id) != 56 {
		t.Fatalf("msg id %q", id)
	}
	host, phy, err := message.ParseOffsetMsgID(id)
	if err != nil || host != m.StoreHost || phy != r.PhyOffset {
		t.Fatalf("msg id parses to %v %d %v", host, phy, err)
	}
	waitDispatched(t, s)
	recs := readAll(t, s, "V6", 0)
	if len(recs) != 1 || recs[0].StoreHost != m.StoreHost || recs[0].BornHost != m.BornHost ||
		recs[0].SysFlag&(message.FlagBornHostV6|message.FlagStoreHostV6) != message.FlagBornHostV6|message.FlagStoreHostV6 {
		t.Fatalf("v6 record %+v", recs)
	}
	if ts, err := s.GetMessageStoreTimestamp("V6", 0, 0); err != nil || ts != r.StoreTimestamp {
		t.Fatalf("store timestamp through v6 born host: %d %v", ts, err)
	}
	// Delayed messages wait in SCHEDULE_TOPIC_XXXX with their delivery time as tag code.
	d := mustPut(t, s, testMsg(names.TopicSchedule, 2, "later", map[string]string{"DELAY": "3", "TAGS": "x"}))
	waitDispatched(t, s)
	u, err := s.cqs.get(names.TopicSchedule, 2).unit(0)
	if err != nil || u.TagsCode != d.StoreTimestamp+10_000 {
		t.Fatalf("schedule tag code %d, want %d", u.TagsCode, d.StoreTimestamp+10_000)
	}
}

func TestPageCacheBusy(t *testing.T) {
	opts := testOptions(t, "")
	clk := newFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts.clock = clk.now
	s := openStore(t, opts)
	mustPut(t, s, testMsg("T", 0, "x", nil))
	// Pretend an appender took the lock 2 s ago and is still inside.
	s.cl.lockedAt.Store(clk.now().UnixMilli())
	clk.advance(2 * time.Second)
	r, err := s.PutMessage(testMsg("T", 0, "y", nil))
	if r.Status != OSPageCacheBusy || !errors.Is(err, ErrPageCacheBusy) {
		t.Fatalf("status %v err %v", r.Status, err)
	}
	s.cl.lockedAt.Store(0)
	mustPut(t, s, testMsg("T", 0, "z", nil))
}

func TestSuggestSlaveAndUnits(t *testing.T) {
	s := openStore(t, testOptions(t, ""))
	for i := range 50 {
		mustPut(t, s, testMsg("T", 0, body(i, 1000), map[string]string{"TAGS": "TagA"}))
	}
	s.dispatchAvailable(nil)
	s.memBytes = 10_000 // pretend memory holds only the last ~10 KB
	r := s.GetMessage("g", "T", 0, 0, 1, 0, nil)
	if !r.SuggestPullingFromSlave {
		t.Fatal("old messages: no slave suggested")
	}
	r.Release()
	r = s.GetMessage("g", "T", 0, 49, 1, 0, nil)
	if r.SuggestPullingFromSlave {
		t.Fatal("newest message: slave suggested")
	}
	r.Release()
	// The same measure tells a pop with init mode MAX whether the queue's first message is
	// still in memory.
	if s.InMemory("T", 0, 0) || !s.InMemory("T", 0, 49) || s.InMemory("T", 0, 50) || s.InMemory("NoTopic", 0, 0) {
		t.Fatal("InMemory: want only the newest messages of an existing queue")
	}
	us, err := s.ConsumeQueueUnits("T", 0, 48, 10)
	if err != nil || len(us) != 2 || us[0].TagsCode != 2598919 || us[1].PhyOffset <= us[0].PhyOffset {
		t.Fatalf("units %+v %v", us, err)
	}
	if _, err := s.ConsumeQueueUnits("T", 0, 50, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("past the end: %v", err)
	}
}
