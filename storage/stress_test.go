package storage

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
)

// TestReadersRaceRetention runs appenders, pullers, replication readers and forced retention
// at once: held bytes must stay mapped and intact, reads of deleted data must answer with a
// status or error, never fault.
func TestReadersRaceRetention(t *testing.T) {
	opts := testOptions(t, "")
	opts.diskUsage = func(string) (float64, error) { return 0.89, nil } // past diskSpaceCleanForciblyRatio: always delete, below the warning level
	s := openStore(t, opts)
	runStore(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				f()
			}
		}()
	}
	for q := range int32(2) {
		run(func() {
			if _, err := s.PutMessage(testMsg("S", q, body(0, 700), map[string]string{"KEYS": "k"})); err != nil {
				t.Error(err)
			}
		})
	}
	for q := range int32(2) {
		off := int64(0)
		run(func() {
			r := s.GetMessage("g", "S", q, off, 16, 0, nil)
			for i, b := range r.Messages {
				var rec message.Record
				if _, err := message.DecodeRecord(b, &rec, true); err != nil || rec.QueueOffset != r.QueueOffsets[i] {
					t.Errorf("pulled record: %v", err)
				}
			}
			off = r.NextBeginOffset
			r.Release()
		})
	}
	run(func() {
		v, err := s.ReadCommitLog(s.MinPhyOffset(), 4096)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				t.Error(err)
			}
			return
		}
		if len(v.Data) >= 8 {
			_ = v.Data[len(v.Data)-1]
		}
		v.Release()
	})
	run(func() {
		if phy, err := s.GetCommitLogOffsetInQueue("S", 0, s.MinOffsetInQueue("S", 0)); err == nil {
			if _, err := s.LookMessageByOffset(phy); err != nil && !errors.Is(err, ErrNotFound) {
				t.Error(err)
			}
		}
	})
	run(func() { s.CleanExpired(); time.Sleep(time.Millisecond) }) // pacing, so the other workers get the store between rounds
	wg.Wait()
	if s.MinPhyOffset() == 0 {
		t.Fatal("retention never deleted anything")
	}
}
