package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// crashChildEnv, when set to a directory, turns TestCrashRecovery into the child: it appends
// with sync flush until killed, printing "ACK <queue> <queue offset> <phy offset> <body>" for
// every acknowledged message.
const crashChildEnv = "MQ_STORAGE_CRASH_CHILD_DIR"

func crashChild(t *testing.T, dir string) {
	opts := testOptions(t, dir)
	opts.FlushDiskType = SyncFlush
	opts.Logger = nil
	s, err := Open(opts)
	if err != nil {
		fmt.Printf("OPENERR %v\n", err)
		os.Exit(3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go s.Run(ctx)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	run := time.Now().UnixNano() // keys are unique across rounds
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("r%d.w%d.%d", run, w, i)
				b := key + "-" + strings.Repeat("x", rng.IntN(2000))
				m := testMsg("C", int32(w%2), b, map[string]string{"KEYS": key})
				r, err := s.PutMessage(m)
				if err != nil {
					continue
				}
				mu.Lock()
				fmt.Fprintf(out, "ACK %d %d %d %s\n", m.QueueID, r.QueueOffset, r.PhyOffset, b)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	os.Exit(0)
}

type ack struct {
	qid        int32
	qoff, phy  int64
	body       string
	generation int
}

func TestCrashRecovery(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	var acks []ack
	const rounds = 8
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashRecovery$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 50 + rng.IntN(400)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		n := 0
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "OPENERR") {
				t.Fatalf("child: %s", line)
			}
			f := strings.SplitN(line, " ", 5)
			if len(f) != 5 || f[0] != "ACK" {
				continue
			}
			qid, _ := strconv.Atoi(f[1])
			qoff, _ := strconv.ParseInt(f[2], 10, 64)
			phy, _ := strconv.ParseInt(f[3], 10, 64)
			acks = append(acks, ack{int32(qid), qoff, phy, f[4], round})
			if n++; n == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		cmd.Wait()
		if n < killAfter {
			t.Fatalf("round %d: child exited after %d acks", round, n)
		}

		s, err := Open(testOptions(t, dir))
		if err != nil {
			t.Fatalf("round %d: recover: %v", round, err)
		}
		rep := s.RecoveryReport()
		if rep.Clean {
			t.Fatalf("round %d: crash not detected", round)
		}
		t.Logf("round %d: %d acks, report actions %q", round, n, rep.Actions)
		checkAfterCrash(t, s, acks)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAfterCrash: every acknowledged message is present and intact, the log validates to its
// end, and the ConsumeQueues match the log exactly.
func checkAfterCrash(t *testing.T, s *Store, acks []ack) {
	t.Helper()
	// The key index survived too: look up a sample of acknowledged keys.
	for i := 0; i < len(acks); i += 1 + len(acks)/50 {
		a := acks[i]
		key := a.body[:strings.IndexByte(a.body, '-')]
		res, err := s.QueryMessage("C", key, 4, 0, 1<<62)
		if err != nil || len(res.Messages) != 1 {
			t.Fatalf("key %s: %d hits, %v", key, len(res.Messages), err)
		}
	}
	for _, a := range acks {
		b, err := s.LookMessageByOffset(a.phy)
		if err != nil {
			t.Fatalf("acked message at %d: %v", a.phy, err)
		}
		var r message.Record
		message.DecodeRecord(b, &r, true)
		if string(r.Body) != a.body || r.QueueID != a.qid || r.QueueOffset != a.qoff {
			t.Fatalf("acked message at %d differs", a.phy)
		}
	}
	perQueue := map[int32][]int64{}
	var lastEnd int64
	err := s.walkCommitLog(s.MinPhyOffset(), s.MaxPhyOffset(), func(r *message.Record) error {
		if message.BodyCRC(r.Body) != r.BodyCRC {
			return fmt.Errorf("bad CRC at %d", r.PhysicalOffset)
		}
		if r.QueueOffset != int64(len(perQueue[r.QueueID])) {
			return fmt.Errorf("queue %d: offset %d after %d records", r.QueueID, r.QueueOffset, len(perQueue[r.QueueID]))
		}
		perQueue[r.QueueID] = append(perQueue[r.QueueID], r.PhysicalOffset)
		lastEnd = r.PhysicalOffset + int64(r.TotalSize)
		return nil
	})
	if err != nil {
		t.Fatalf("log after recovery: %v", err)
	}
	if max := s.MaxPhyOffset(); max != lastEnd && max%testSegBytes != 0 {
		t.Fatalf("log end %d, last record ends at %d", max, lastEnd)
	}
	// Nothing past the end: the rest of the last segment is zero.
	if sg := s.cl.segs.last(); sg != nil {
		for i := sg.wrote.Load(); i < sg.size; i++ {
			if sg.data[i] != 0 {
				t.Fatalf("byte %d past the log end is %#x", sg.start+i, sg.data[i])
			}
		}
	}
	for qid, phys := range perQueue {
		if got := s.MaxOffsetInQueue("C", qid); got != int64(len(phys)) {
			t.Fatalf("queue %d: max offset %d, log has %d", qid, got, len(phys))
		}
		for off, phy := range phys {
			got, err := s.GetCommitLogOffsetInQueue("C", qid, int64(off))
			if err != nil || got != phy {
				t.Fatalf("queue %d unit %d: %d %v, log has %d", qid, off, got, err, phy)
			}
		}
	}
}

// TestPowerLossLosesOnlyUnsyncedData simulates a power cut: after the crash every CommitLog
// byte past the last completed fsync is lost (zeroed). Every message acknowledged by a sync
// flush append must survive, and recovery must bring the queues into line.
func TestPowerLossLosesOnlyUnsyncedData(t *testing.T) {
	opts := testOptions(t, "")
	opts.FlushDiskType = SyncFlush
	opts.ops = defaultFileOps()
	h := newSyncHook(opts.ops)
	s := openStore(t, opts)
	h.s.Store(s)
	runStore(t, s)
	var mu sync.Mutex
	var acks []ack
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%d.%d", w, i)
				m := testMsg("C", int32(w%2), key+"-"+strings.Repeat("y", 100+i%700), map[string]string{"KEYS": key})
				r, err := s.PutMessage(m)
				if err != nil {
					continue
				}
				mu.Lock()
				acks = append(acks, ack{qid: m.QueueID, qoff: r.QueueOffset, phy: r.PhyOffset, body: string(m.Body)})
				mu.Unlock()
			}
		}()
	}
	waitFor(t, 10*time.Second, func() bool { return s.cl.segs.len() >= 4 })
	// Freeze fsyncs: appenders soon all wait for a group commit that cannot finish. The
	// disk as the power cut leaves it is a copy of the files now, minus every CommitLog
	// byte past the last completed fsync.
	h.block.Store(true)
	released := false
	t.Cleanup(func() { // runs before runStore's: a failure here must not leave the flusher held
		if !released {
			close(h.gate)
			close(stop)
		}
	})
	select {
	case <-h.entered: // the flusher is inside an fsync, held
	case <-time.After(10 * time.Second):
		t.Fatal("no fsync began once fsyncs were frozen")
	}
	waitFor(t, 10*time.Second, func() bool { return s.gc.queued() == 4 })
	durable := h.durable.Load()
	maxPhy := s.cl.maxPhy.Load()
	waitFor(t, 5*time.Second, func() bool { return s.DispatchedPhyOffset() >= s.FlushedPhyOffset() })
	if d := s.DispatchedPhyOffset(); d > durable {
		t.Fatalf("dispatched to %d, past the last fsync's %d: consumers saw what the cut erases", d, durable)
	}
	dir := t.TempDir()
	copyDir(t, opts.Dir, dir)
	mu.Lock()
	cut := len(acks) // acknowledged before the power cut
	mu.Unlock()
	close(h.gate)
	close(stop)
	released = true
	wg.Wait()
	for off := durable; off < maxPhy; {
		segEnd := (off/testSegBytes + 1) * testSegBytes
		zero(t, segPath(dir, off), off%testSegBytes, segEnd-off)
		off = segEnd
	}
	s2 := openStore(t, testOptions(t, dir))
	rep := s2.RecoveryReport()
	t.Logf("durable %d of %d; report %q", durable, maxPhy, rep.Actions)
	mu.Lock()
	defer mu.Unlock()
	acks = acks[:cut]
	var kept []ack
	for _, a := range acks {
		if a.phy < durable {
			kept = append(kept, a)
		}
	}
	if len(kept) != len(acks) {
		t.Fatalf("%d acknowledged messages lie past the last fsync", len(acks)-len(kept))
	}
	checkAfterCrash(t, s2, acks)
	if s2.MaxPhyOffset() > durable {
		t.Fatalf("log ends at %d, past the durable %d", s2.MaxPhyOffset(), durable)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		// The store runs on: a file renamed over another (the manifest's and the checkpoint's
		// temporary files) may be gone by the time it is read, as a power cut may find it.
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
