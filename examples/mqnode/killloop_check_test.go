package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// The kill loops' checks: the bodies the senders send, the in-process check of a killed
// store's copy and the read-back of a running broker's queues over the wire.

func klID(sender, seq int) string { return "s" + strconv.Itoa(sender) + "-" + strconv.Itoa(seq) }

// klBody is the body of a sender's seq-th message: its id, '|', then 16 to 1024 bytes drawn
// from the seed, the sender and seq, so any stored copy can be checked byte for byte.
func klBody(seed int64, sender, seq int) []byte {
	id := klID(sender, seq)
	r := rand.New(rand.NewPCG(uint64(seed), uint64(sender)<<32|uint64(uint32(seq))))
	n := 16 + r.IntN(1009)
	b := make([]byte, len(id)+1+n)
	copy(b, id)
	b[len(id)] = '|'
	for p := b[len(id)+1:]; len(p) > 0; {
		v := r.Uint64()
		for i := 0; i < 8 && len(p) > 0; i++ {
			p[0], p, v = byte(v), p[1:], v>>8
		}
	}
	return b
}

// klCheckBody returns the id of a body klBody made, or why it is not one.
func klCheckBody(seed int64, body []byte) (string, error) {
	id, _, ok := bytes.Cut(body, []byte("|"))
	sender, seq, ok2 := strings.Cut(strings.TrimPrefix(string(id), "s"), "-")
	s, err1 := strconv.Atoi(sender)
	q, err2 := strconv.Atoi(seq)
	if !ok || !ok2 || !bytes.HasPrefix(id, []byte("s")) || err1 != nil || err2 != nil || s < 0 || s >= klSenders || q < 0 {
		return "", fmt.Errorf("body %.40q... is not one the test sent", body)
	}
	if !bytes.Equal(body, klBody(seed, s, q)) {
		return "", fmt.Errorf("body of %s (%d bytes) differs from the one sent", id, len(body))
	}
	return string(id), nil
}

// copyTree copies the directory src (a store no process has open) to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// storeCheck is what verifyKilledStore found in the copy of one killed store.
type storeCheck struct {
	kill         int
	copied, took time.Duration
	err          error
	scanned      int  // records crash recovery validated
	cut          bool // recovery cut the CommitLog (a torn tail)
}

// klRecord is where the CommitLog holds one message of the topic.
type klRecord struct {
	id   string
	phy  int64
	size int32
}

// verifyKilledStore opens the copy of a killed store at opts.Dir and checks it whole: every
// record, every ConsumeQueue unit, the messages of hold, a sample of them through the index,
// the consumer offsets when checkOffsets is set, and a clean reopen with the same ends.
func verifyKilledStore(opts storage.Options, seed int64, hold []ackedMsg, checkOffsets bool) storeCheck {
	var c storeCheck
	s, err := storage.Open(opts)
	if err != nil {
		c.err = fmt.Errorf("it does not open: %w", err)
		return c
	}
	rep := s.RecoveryReport()
	c.scanned, c.cut = rep.ScannedRecords, rep.TruncatedAt >= 0
	// A clean report is no error: a kill can land while the store is closed (before a start
	// opens it, or while a role change restarts the broker).
	queues, err := checkStore(s, seed, hold, checkOffsets, opts.Dir)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close after recovery: %w", cerr)
	}
	if err != nil {
		c.err = fmt.Errorf("%w (recovery: %+v)", err, rep)
		return c
	}
	// The recovered store reopens as cleanly closed, with the same queues. Under ForkLock: a
	// child this process is starting (a restart) holds the first open's lock file from its fork
	// until its exec, and its flock with it, which would refuse the reopen.
	syscall.ForkLock.RLock()
	s, err = storage.Open(opts)
	syscall.ForkLock.RUnlock()
	if err != nil {
		c.err = fmt.Errorf("it does not reopen after recovery: %w", err)
		return c
	}
	defer s.Close()
	if !s.RecoveryReport().Clean || s.MaxPhyOffset() != rep.MaxPhyOffset {
		c.err = fmt.Errorf("reopened after recovery: clean %v, CommitLog end %d, was %d", s.RecoveryReport().Clean,
			s.MaxPhyOffset(), rep.MaxPhyOffset)
		return c
	}
	for q, n := range queues {
		if got := s.MaxOffsetInQueue(klTopic, int32(q)); got != n {
			c.err = fmt.Errorf("reopened after recovery: queue %d ends at %d, was %d", q, got, n)
			return c
		}
	}
	return c
}

// checkStore walks the whole CommitLog and every ConsumeQueue of the topic of an opened store
// and returns each queue's length.
func checkStore(s *storage.Store, seed int64, hold []ackedMsg, checkOffsets bool, dir string) (map[int]int64, error) {
	byQueue := map[int][]klRecord{}
	for off, end := s.MinPhyOffset(), s.MaxPhyOffset(); off < end; {
		v, err := s.ReadCommitLog(off, 1<<20)
		if err != nil {
			return nil, fmt.Errorf("read the CommitLog at %d of %d: %w", off, end, err)
		}
		data := v.Data
		if len(data) == 0 {
			v.Release()
			return nil, fmt.Errorf("the CommitLog ends at %d, its end is %d", off, end)
		}
		pos := 0
		for pos < len(data) && off+int64(pos) < end {
			var r message.Record
			n, err := message.DecodeRecord(data[pos:], &r, true)
			if errors.Is(err, message.ErrMagic) && r.Magic == message.BlankMagicCode && r.TotalSize > 0 {
				pos += int(r.TotalSize) // the blank record that pads a segment
				continue
			}
			if errors.Is(err, message.ErrShort) && pos > 0 {
				break // read on from here
			}
			if err != nil {
				v.Release()
				return nil, fmt.Errorf("record at CommitLog offset %d: %w", off+int64(pos), err)
			}
			at := off + int64(pos)
			if r.PhysicalOffset != at {
				v.Release()
				return nil, fmt.Errorf("record at CommitLog offset %d says it is at %d", at, r.PhysicalOffset)
			}
			if string(r.Topic) == klTopic {
				id, err := klCheckBody(seed, r.Body)
				if err != nil {
					v.Release()
					return nil, fmt.Errorf("record at CommitLog offset %d: %w", at, err)
				}
				q := int(r.QueueID)
				if q < 0 || q >= klQueues || r.QueueOffset != int64(len(byQueue[q])) {
					v.Release()
					return nil, fmt.Errorf("record at CommitLog offset %d: queue %d offset %d, the queue's next is %d",
						at, q, r.QueueOffset, len(byQueue[q]))
				}
				byQueue[q] = append(byQueue[q], klRecord{id: id, phy: at, size: r.TotalSize})
			}
			pos += n
		}
		v.Release()
		off += int64(pos)
	}

	lengths := map[int]int64{}
	for _, qi := range s.Queues() {
		if qi.Topic != klTopic {
			continue
		}
		q := int(qi.QueueID)
		recs := byQueue[q]
		if qi.MinOffset != 0 || qi.MaxOffset != int64(len(recs)) {
			return nil, fmt.Errorf("queue %d holds offsets [%d, %d), the CommitLog %d messages of it", q, qi.MinOffset, qi.MaxOffset, len(recs))
		}
		lengths[q] = qi.MaxOffset
		for off := int64(0); off < qi.MaxOffset; {
			units, err := s.ConsumeQueueUnits(klTopic, int32(q), off, 1000)
			if err != nil {
				return nil, fmt.Errorf("queue %d unit %d: %w", q, off, err)
			}
			for _, u := range units {
				if r := recs[off]; u.PhyOffset != r.phy || u.Size != r.size {
					return nil, fmt.Errorf("queue %d unit %d points at %d (%d bytes), the record is at %d (%d bytes)",
						q, off, u.PhyOffset, u.Size, r.phy, r.size)
				}
				off++
			}
		}
	}
	for q, recs := range byQueue {
		if _, ok := lengths[q]; !ok {
			return nil, fmt.Errorf("the CommitLog holds %d messages of queue %d, which has no ConsumeQueue", len(recs), q)
		}
	}

	ids := make(map[int][]string, len(byQueue))
	for q, recs := range byQueue {
		for _, r := range recs {
			ids[q] = append(ids[q], r.id)
		}
	}
	if lost := lostMessages(hold, func(q int) []string { return ids[q] }); lost != "" {
		return nil, errors.New(lost)
	}
	// A sample of the acknowledged messages through the key index, newest included.
	for i := len(hold) - 1; i >= 0 && i >= len(hold)-8; i-- {
		if err := findByKey(s, hold[i]); err != nil {
			return nil, err
		}
	}
	for i := 0; i < len(hold); i += max(1, len(hold)/8) {
		if err := findByKey(s, hold[i]); err != nil {
			return nil, err
		}
	}

	if checkOffsets {
		var f struct {
			OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
		}
		_, err := storage.ReadJSONFile(filepath.Join(dir, "config", "consumerOffset.json"), &f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("consumerOffset.json: %w", err)
		}
		for q, committed := range f.OffsetTable[klTopic+"@"+klGroup] {
			if committed > lengths[int(q)] {
				return nil, fmt.Errorf("consumerOffset.json commits offset %d of queue %d, which ends at %d", committed, q, lengths[int(q)])
			}
		}
	}
	return lengths, nil
}

// findByKey looks an acknowledged message up by its UNIQ_KEY in the store's index.
func findByKey(s *storage.Store, a ackedMsg) error {
	res, err := s.QueryMessage(klTopic, a.uniq, 4, 0, math.MaxInt64)
	if err != nil {
		return fmt.Errorf("index lookup of %s: %w", a.id, err)
	}
	for _, b := range res.Messages {
		var r message.Record
		if _, err := message.DecodeRecord(b, &r, true); err == nil && int(r.QueueID) == a.queue && r.QueueOffset == a.offset {
			return nil
		}
	}
	return fmt.Errorf("the index finds no record of %s (UNIQ_KEY %s, queue %d offset %d): %d hits", a.id, a.uniq, a.queue, a.offset, len(res.Messages))
}

// lostMessages describes the messages of acked that ids (a queue's message ids by offset) do
// not hold where their SendResult put them; "" when none.
func lostMessages(acked []ackedMsg, ids func(q int) []string) string {
	var lost []string
	n := 0
	for _, a := range acked {
		got := ids(a.queue)
		if a.offset < int64(len(got)) && got[a.offset] == a.id {
			continue
		}
		n++
		if len(lost) < 5 {
			found := "past the queue's end"
			if a.offset < int64(len(got)) {
				found = "held by " + got[a.offset]
			}
			lost = append(lost, fmt.Sprintf("%s at queue %d offset %d (%s)", a.id, a.queue, a.offset, found))
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d acknowledged messages lost: %s", n, len(acked), strings.Join(lost, "; "))
}

// readBroker reads every queue of the topic from the broker at addr over the wire, checking
// each record whole and the offsets without a gap, and returns the message ids by queue and
// offset.
func (l *killLoop) readBroker(addr string) (map[int][]string, error) {
	out := make(map[int][]string, klQueues)
	errs := make([]error, klQueues)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for q := range klQueues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, err := l.pullQueue(addr, q)
			errs[q] = err
			mu.Lock()
			out[q] = ids
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func (l *killLoop) invoke(addr string, code int32, header remoting.Header) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return l.client.InvokeSync(ctx, addr, remoting.NewRequest(code, remoting.EncodeHeader(header), nil))
}

// pullQueue reads one queue from offset 0 to its max offset with raw PULL_MESSAGEs.
func (l *killLoop) pullQueue(addr string, q int) ([]string, error) {
	resp, err := l.invoke(addr, remoting.GetMaxOffset, &protocol.QueueHeader{Topic: klTopic, QueueID: int32(q)})
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return nil, fmt.Errorf("%s queue %d: max offset: %w", addr, q, err)
	}
	maxOff, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s queue %d: max offset %q", addr, q, resp.ExtFields["offset"])
	}
	ids := make([]string, 0, maxOff)
	for off := int64(0); off < maxOff; {
		h := &protocol.PullMessageRequestHeader{ConsumerGroup: admin.ToolsConsumerGroup, Topic: klTopic, QueueID: int32(q),
			QueueOffset: off, MaxMsgNums: 32, SysFlag: protocol.BuildPullSysFlag(false, false, true, false),
			Subscription: protocol.SubAll, ExpressionType: protocol.ExpressionTag}
		resp, err := l.invoke(addr, remoting.PullMessage, h)
		if err != nil {
			return nil, fmt.Errorf("%s queue %d: pull at %d: %w", addr, q, off, err)
		}
		if resp.Code != remoting.Success {
			return nil, fmt.Errorf("%s queue %d: pull at %d of max %d: %s %q", addr, q, off, maxOff,
				remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
		body := resp.Body
		if len(body) == 0 {
			return nil, fmt.Errorf("%s queue %d: pull at %d of max %d: no message", addr, q, off, maxOff)
		}
		for len(body) > 0 {
			var r message.Record
			n, err := message.DecodeRecord(body, &r, true)
			if err != nil {
				return nil, fmt.Errorf("%s queue %d: record at offset %d: %w", addr, q, off, err)
			}
			if int(r.QueueID) != q || r.QueueOffset != off || string(r.Topic) != klTopic {
				return nil, fmt.Errorf("%s queue %d: at offset %d a record of %s queue %d offset %d", addr, q, off,
					r.Topic, r.QueueID, r.QueueOffset)
			}
			id, err := klCheckBody(l.seed, r.Body)
			if err != nil {
				return nil, fmt.Errorf("%s queue %d offset %d: %w", addr, q, off, err)
			}
			ids = append(ids, id)
			body = body[n:]
			off++
		}
	}
	return ids, nil
}

// checkMaster reads the master at addr back and checks that it holds every acknowledged
// message where its SendResult put it and that the group's committed offsets are within its
// queues. The senders must be parked. It returns what it read.
func (l *killLoop) checkMaster(what, addr string) map[int][]string {
	t := l.t
	t.Helper()
	ids, err := l.readBroker(addr)
	if err != nil {
		t.Fatalf("kill %d: %s: %v", l.kills, what, err)
	}
	if lost := lostMessages(l.ackedSnapshot(), func(q int) []string { return ids[q] }); lost != "" {
		t.Fatalf("kill %d: %s: %s", l.kills, what, lost)
	}
	for q := range klQueues {
		h := &protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: klGroup, Topic: klTopic, QueueID: int32(q)}
		resp, err := l.invoke(addr, remoting.QueryConsumerOffset, h)
		if err != nil {
			t.Fatalf("kill %d: %s: QUERY_CONSUMER_OFFSET: %v", l.kills, what, err)
		}
		if resp.Code == remoting.QueryNotFound {
			continue
		}
		committed, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		if resp.Code != remoting.Success || err != nil {
			t.Fatalf("kill %d: %s: QUERY_CONSUMER_OFFSET: %s %q %v", l.kills, what, remoting.ResponseCodeName(resp.Code), resp.Remark, resp.ExtFields)
		}
		if committed > int64(len(ids[q])) {
			t.Fatalf("kill %d: %s: the group's committed offset %d of queue %d is past its end %d", l.kills, what, committed, q, len(ids[q]))
		}
	}
	return ids
}

// checkReplica reads a replica back and checks that it holds what the master does, message
// for message (one history).
func (l *killLoop) checkReplica(what, addr string, master map[int][]string) {
	t := l.t
	t.Helper()
	ids, err := l.readBroker(addr)
	if err != nil {
		t.Fatalf("kill %d: %s: %v", l.kills, what, err)
	}
	for q := range klQueues {
		if !slices.Equal(ids[q], master[q]) {
			i := 0
			for i < len(ids[q]) && i < len(master[q]) && ids[q][i] == master[q][i] {
				i++
			}
			t.Fatalf("kill %d: %s: queue %d holds %d messages, the master %d, first different at offset %d",
				l.kills, what, q, len(ids[q]), len(master[q]), i)
		}
	}
}

// waitCaughtUp waits until the replica at addr has the max offsets of the master at master.
func (l *killLoop) waitCaughtUp(what, master, addr string) {
	t := l.t
	t.Helper()
	var want, got map[int]int64
	var werr, gerr error
	if !waitUntil(klWait, func() bool {
		want, werr = topicMaxOffsets(l.client, master, klTopic)
		got, gerr = topicMaxOffsets(l.client, addr, klTopic)
		return werr == nil && gerr == nil && len(want) == klQueues && maps.Equal(want, got)
	}) {
		t.Fatalf("kill %d: %s has max offsets %v (%v) %v after the restart, the master %v (%v)", l.kills, what, got, gerr, klWait, want, werr)
	}
}

// klCreateTopic creates the topic with klQueues queues on the broker at addr and waits until
// the name server at ns routes it.
func (l *killLoop) klCreateTopic(addr, ns string) {
	t := l.t
	t.Helper()
	h := &protocol.CreateTopicRequestHeader{Topic: klTopic, DefaultTopic: "TBW102", ReadQueueNums: klQueues,
		WriteQueueNums: klQueues, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	resp, err := l.invoke(addr, remoting.UpdateAndCreateTopic, h)
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		t.Fatalf("create %s: %v", klTopic, err)
	}
	waitFor(t, klWait, "the route of "+klTopic, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := l.client.InvokeSync(ctx, ns, route.BuildGetRouteInfo(klTopic))
		if err != nil || resp.Code != remoting.Success {
			return false
		}
		r, err := route.DecodeRouteInfoResponse(resp)
		return err == nil && len(r.QueueDatas) == 1 && r.QueueDatas[0].WriteQueueNums == klQueues
	})
}
