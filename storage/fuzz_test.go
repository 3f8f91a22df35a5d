package storage

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mqgo/mq/internal/message"
)

func FuzzConsumeQueueUnit(f *testing.F) {
	var b [CQUnitBytes]byte
	putCQUnit(b[:], CQUnit{PhyOffset: 1 << 40, Size: 300, TagsCode: -5})
	f.Add(b[:])
	f.Add(make([]byte, CQUnitBytes))
	f.Add(b[:7])
	putCQUnit(b[:], CQUnit{PhyOffset: 0, Size: blankUnitSize})
	f.Add(b[:])
	f.Fuzz(func(t *testing.T, in []byte) {
		u, err := DecodeCQUnit(in)
		if err != nil {
			return
		}
		if u.PhyOffset < 0 || u.Size <= 0 {
			t.Fatalf("accepted %+v", u)
		}
		var out [CQUnitBytes]byte
		putCQUnit(out[:], u)
		if string(out[:]) != string(in[:CQUnitBytes]) {
			t.Fatalf("round trip %x -> %x", in[:CQUnitBytes], out)
		}
	})
}

// FuzzRecoverDamagedLog writes fuzz bytes over a crashed store's log at a fuzz-chosen place
// and reopens it: recovery must not panic; it either fails with ErrCorrupt or leaves a log
// whose every record validates and ConsumeQueues that agree with it.
func FuzzRecoverDamagedLog(f *testing.F) {
	f.Add(uint16(0), []byte{0xFF})
	f.Add(uint16(100), []byte("garbage"))
	f.Add(uint16(5000), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint16(9000), []byte{0, 0, 1, 0, 0xDA, 0xA3, 0x20, 0xA7})
	f.Add(uint16(65530), []byte{0x7F, 0xFF, 0xFF, 0xFF, 0xCB, 0xD4, 0x31, 0x94})
	f.Fuzz(func(t *testing.T, at uint16, junk []byte) {
		opts := testOptions(t, "")
		opts.Logger = nil
		s, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 120 {
			if _, err := s.PutMessage(testMsg("T", int32(i%2), body(i, 500), map[string]string{"KEYS": "k"})); err != nil {
				t.Fatal(err)
			}
		}
		s.dispatchAvailable(nil)
		crash(s)
		path := filepath.Join(opts.Dir, "commitlog", segmentName(0))
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		off := int64(at) % testSegBytes
		if len(junk) > int(testSegBytes-off) {
			junk = junk[:testSegBytes-off]
		}
		fh.WriteAt(junk, off)
		fh.Close()
		s2, err := Open(opts)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v", err)
			}
			return
		}
		defer s2.Close()
		// Every record is where its queue's unit says, and every unit points to a record
		// that names that queue and offset. (A damaged header the body CRC does not cover can
		// move a record to another queue or offset; it stays consistent.)
		units := 0
		err = s2.walkCommitLog(s2.MinPhyOffset(), s2.MaxPhyOffset(), func(r *message.Record) error {
			if message.BodyCRC(r.Body) != r.BodyCRC {
				t.Fatalf("bad CRC survived at %d", r.PhysicalOffset)
			}
			phy, err := s2.GetCommitLogOffsetInQueue(string(r.Topic), r.QueueID, r.QueueOffset)
			if err != nil || phy != r.PhysicalOffset {
				t.Fatalf("unit %s/%d/%d: %d %v, log %d", r.Topic, r.QueueID, r.QueueOffset, phy, err, r.PhysicalOffset)
			}
			units++
			return nil
		})
		if err != nil {
			t.Fatalf("walk: %v", err)
		}
		for _, q := range s2.Queues() {
			for off := q.MinOffset; off < q.MaxOffset; off++ {
				u, err := s2.cqs.get(q.Topic, q.QueueID).unit(off)
				if err != nil {
					t.Fatalf("%s/%d unit %d: %v", q.Topic, q.QueueID, off, err)
				}
				if u.Size == blankUnitSize {
					continue
				}
				b, err := s2.LookMessageByOffset(u.PhyOffset)
				var r message.Record
				if err == nil {
					_, err = message.DecodeRecord(b, &r, true)
				}
				if err != nil || string(r.Topic) != q.Topic || r.QueueID != q.QueueID || r.QueueOffset != off {
					t.Fatalf("%s/%d unit %d points to %d: %v %s/%d/%d", q.Topic, q.QueueID, off, u.PhyOffset, err, r.Topic, r.QueueID, r.QueueOffset)
				}
				units--
			}
		}
		if units != 0 {
			t.Fatalf("%d more records than units", units)
		}
		_ = binary.BigEndian
	})
}
