package storage

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConsistentPoint(t *testing.T) {
	h := func(pairs ...int64) []EpochEntry {
		var out []EpochEntry
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
		}
		return out
	}
	tests := []struct {
		name                string
		local, remote       []EpochEntry
		localMax, remoteMax int64
		want                int64
		ok                  bool
	}{
		{"identical histories", h(1, 0, 2, 500), h(1, 0, 2, 500), 900, 900, 900, true},
		{"slave behind in the same epoch", h(1, 0, 2, 500), h(1, 0, 2, 500), 700, 900, 700, true},
		{"slave behind, master has a later epoch", h(1, 0), h(1, 0, 2, 500), 300, 900, 300, true},
		// The classic case: the old master of epoch 2 wrote to 900, but the new master's copy
		// of epoch 2 ends at 700, where it started epoch 3. The old master is cut to 700.
		{"old master ahead in the old epoch", h(1, 0, 2, 500), h(1, 0, 2, 500, 3, 700), 900, 1200, 700, true},
		{"remote with more epochs", h(1, 0, 3, 400), h(1, 0, 3, 400, 4, 600, 5, 800), 600, 1000, 600, true},
		// Epoch 2 started at different offsets: not the same epoch 2; epoch 1 is shared.
		{"same epoch, other start", h(1, 0, 2, 400), h(1, 0, 2, 300), 600, 800, 300, true},
		// The local file names an epoch starting past its log's end (a cut a crash
		// interrupted): its ends stop at the log's end.
		{"local file past its log", h(1, 0, 2, 500), h(1, 0, 2, 500, 3, 900), 400, 1000, 400, true},
		{"no common epoch", h(1, 0, 2, 100), h(3, 0, 4, 100), 200, 300, 0, false},
		{"empty local", nil, h(1, 0), 0, 100, 0, false},
		{"empty remote", h(1, 0), nil, 100, 0, 0, false},
		{"both empty", nil, nil, 0, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ConsistentPoint(tc.local, tc.remote, tc.localMax, tc.remoteMax)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("ConsistentPoint = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
			// The point is symmetric: both sides agree on it.
			back, backOK := ConsistentPoint(tc.remote, tc.local, tc.remoteMax, tc.localMax)
			if back != got || backOK != ok {
				t.Fatalf("swapped: %d, %v", back, backOK)
			}
		})
	}
}

func TestEpochHistory(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	if got := s.Epochs(); len(got) != 0 {
		t.Fatalf("new store has epochs %v", got)
	}
	for i := range 10 {
		mustPut(t, s, testMsg("E", 0, body(i, 100), nil))
	}
	end := s.MaxPhyOffset()
	steps := []struct {
		epoch int32
		start int64
		err   error
	}{
		{1, 0, nil},
		{1, 0, nil},              // the same entry again: no-op
		{1, 50, nil},             // same epoch, later: its master restarted; no-op
		{0, 60, ErrEpochOrder},   // lower epoch
		{2, 100, nil},            // next master
		{2, 40, ErrEpochOrder},   // same epoch, earlier start
		{3, 100, nil},            // epoch 2 held nothing: replaced
		{4, 90, ErrEpochOrder},   // starts before the last
		{5, end, nil},            // at the log end
		{6, -1, ErrEpochOrder},   // negative
		{-1, end, ErrEpochOrder}, // negative epoch
	}
	for _, st := range steps {
		if err := s.AppendEpoch(st.epoch, st.start); !errors.Is(err, st.err) || (st.err == nil && err != nil) {
			t.Fatalf("AppendEpoch(%d, %d) = %v, want %v", st.epoch, st.start, err, st.err)
		}
	}
	want := []EpochEntry{{1, 0}, {3, 100}, {5, end}}
	if got := s.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	// The file is RocketMQ's CheckpointFile text.
	b, err := os.ReadFile(filepath.Join(opts.Dir, EpochFileName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 5 || lines[0] != "3" || lines[2] != "1-0" || lines[3] != "3-100" {
		t.Fatalf("epoch file:\n%s", b)
	}

	if err := s.TruncateEpochs(100); err != nil {
		t.Fatal(err)
	}
	if got := s.Epochs(); !slices.Equal(got, want[:1]) {
		t.Fatalf("after TruncateEpochs(100): %v", got)
	}
	// A slave adopts its master's history as far as its log goes.
	master := []EpochEntry{{1, 0}, {2, 200}, {4, end}, {7, end + 500}}
	if err := s.SetEpochs(master); err != nil {
		t.Fatal(err)
	}
	if got := s.Epochs(); !slices.Equal(got, master[:3]) {
		t.Fatalf("after SetEpochs: %v", got)
	}
	if err := s.SetEpochs([]EpochEntry{{2, 0}, {1, 10}}); !errors.Is(err, ErrEpochOrder) {
		t.Fatalf("SetEpochs out of order: %v", err)
	}
	huge := make([]EpochEntry, maxEpochEntries+1)
	for i := range huge {
		huge[i] = EpochEntry{Epoch: int32(i), StartOffset: 0}
	}
	if err := s.SetEpochs(huge); !errors.Is(err, ErrEpochOrder) {
		t.Fatalf("SetEpochs with %d entries: %v", len(huge), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, opts)
	if got := s2.Epochs(); !slices.Equal(got, master[:3]) {
		t.Fatalf("reopened: %v", got)
	}
	if err := s2.AppendEpoch(8, end); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if err := s2.AppendEpoch(9, end); !errors.Is(err, ErrClosed) {
		t.Fatalf("AppendEpoch after Close: %v", err)
	}
}

func TestEpochFileDamaged(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	mustPut(t, s, testMsg("E", 0, "m", nil))
	for i, e := range []EpochEntry{{1, 0}, {2, 0}, {3, 0}} {
		if err := s.AppendEpoch(e.Epoch, e.StartOffset+int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Epochs()
	s.Close()
	path := filepath.Join(opts.Dir, EpochFileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	// A damaged file with a sound backup: the backup (the history before the last change).
	damaged := strings.Replace(string(b), "3-2", "3-7", 1)
	if err := os.WriteFile(path, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, opts)
	if got := s2.Epochs(); !slices.Equal(got, before[:2]) {
		t.Fatalf("from the backup: %v, want %v", got, before[:2])
	}
	if acts := s2.RecoveryReport().Actions; !slices.ContainsFunc(acts, func(a string) bool { return strings.Contains(a, "epoch file damaged") }) {
		t.Fatalf("report does not say so: %q", acts)
	}
	s2.Close()

	// Both damaged: Open fails and names the file.
	for _, p := range []string{path, path + ".bak"} {
		if err := os.WriteFile(p, []byte("2\n1\n1-0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s3, err := Open(opts); err == nil || !strings.Contains(err.Error(), path) {
		if s3 != nil {
			s3.Close()
		}
		t.Fatalf("Open with a damaged epoch file: %v", err)
	}
	// Removing them is starting over with an empty history.
	os.Remove(path)
	os.Remove(path + ".bak")
	s4 := openStore(t, opts)
	if got := s4.Epochs(); len(got) != 0 {
		t.Fatalf("no file: %v", got)
	}
}

func TestDecodeEpochFileRejects(t *testing.T) {
	good := encodeEpochFile([]EpochEntry{{1, 0}, {4, 1 << 40}})
	if got, err := decodeEpochFile("f", good); err != nil || !slices.Equal(got, []EpochEntry{{1, 0}, {4, 1 << 40}}) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	for _, bad := range []string{
		"",
		"1\n",
		"x\n0\n",
		"-1\n0\n",
		"2\n0\n", // count without entries
		string(encodeEpochFile([]EpochEntry{{1, 0}}))[:6], // torn
		"1\n99999999999\n1-0\n",
		strings.Replace(string(good), "4-", "0-", 1),          // crc
		string(encodeEpochFile([]EpochEntry{{2, 0}, {1, 5}})), // order, crc right
		string(encodeEpochFile(nil)) + "junk",
		"70000\n0\n", // more entries than a history may hold
	} {
		if _, err := decodeEpochFile("f", []byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzDecodeEpochFile(f *testing.F) {
	f.Add(encodeEpochFile([]EpochEntry{{1, 0}, {3, 4096}}))
	f.Add(encodeEpochFile(nil))
	f.Add([]byte("1\n0\n1-0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeEpochFile("f", b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if err := checkEpochOrder(h); err != nil {
			t.Fatalf("accepted a bad history: %v", err)
		}
		again, err := decodeEpochFile("f", encodeEpochFile(h))
		if err != nil || !slices.Equal(again, h) {
			t.Fatalf("round trip: %v %v", again, err)
		}
	})
}

// A slave adopts its master's whole history; the entries past its log's end wait, and each
// joins the history just before replication writes the first byte of its epoch, so that no
// replicated byte is ever counted in the epoch before its own. They used to be dropped: a
// replica then counted everything it replicated afterwards in its older epoch, and a deposed
// master's writes of that epoch looked like a prefix of it (internal/sim, seed 76).
func TestReplicatedEpochsFollowTheData(t *testing.T) {
	master := openStore(t, testOptions(t, ""))
	runStore(t, master)
	for i := range 60 {
		mustPut(t, master, testMsg("E", 0, body(i, 200), nil))
	}
	end := master.MaxPhyOffset()
	history := []EpochEntry{{1, 0}, {2, end / 3}, {3, end / 2}}
	slaveOpts := testOptions(t, "")
	slaveOpts.Slave = true
	slave := openStore(t, slaveOpts)
	runStore(t, slave)
	if err := slave.SetEpochs(history); err != nil {
		t.Fatal(err)
	}
	if got := slave.Epochs(); !slices.Equal(got, history[:1]) {
		t.Fatalf("adopted by an empty slave: %v, want %v", got, history[:1])
	}
	for off := int64(0); off < end; {
		v, err := master.ReadCommitLog(off, 700)
		if err != nil {
			t.Fatal(err)
		}
		if err := slave.AppendRaw(off, v.Data); err != nil {
			t.Fatal(err)
		}
		off += int64(len(v.Data))
		v.Release()
		var want []EpochEntry
		for _, e := range history {
			if e.StartOffset < off {
				want = append(want, e)
			}
		}
		if got := slave.Epochs(); !slices.Equal(got, want) {
			t.Fatalf("log at %d: history %v, want %v", off, got, want)
		}
	}
	// A slave that becomes master writes its own epoch: nothing waits any more.
	if err := slave.SetEpochs(append(history, EpochEntry{4, end + 100})); err != nil {
		t.Fatal(err)
	}
	if err := slave.AppendEpoch(5, end); err != nil {
		t.Fatal(err)
	}
	if err := slave.epochsBefore(end + 1000); err != nil {
		t.Fatal(err)
	}
	if got := slave.Epochs(); !slices.Equal(got, append(slices.Clone(history), EpochEntry{5, end})) {
		t.Fatalf("after AppendEpoch: %v", got)
	}
}
