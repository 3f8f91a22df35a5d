package storage

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
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
