package storage

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// sameSlotKey returns a key of topic T other than key whose index hash falls in key's slot.
func sameSlotKey(t *testing.T, slots int, key string) string {
	t.Helper()
	want := int(keyHash([]byte("T"), []byte(key))) % slots
	for i := range 100_000 {
		k := fmt.Sprintf("other%d", i)
		if int(keyHash([]byte("T"), []byte(k)))%slots == want {
			return k
		}
	}
	t.Fatal("no key shares the slot")
	return ""
}

func expectHits(t *testing.T, s *Store, keys ...string) {
	t.Helper()
	for _, k := range keys {
		res, err := s.QueryMessage("T", k, 4, 0, 1<<62)
		if err != nil || len(res.Messages) != 1 {
			t.Errorf("key %s: %d hits, %v", k, len(res.Messages), err)
		}
	}
}

// TestRecoveryIndexPutKilledBeforeCount: the process is killed inside indexFile.put after it
// pointed the hash slot at its new entry but before the header counted the entry. Recovery
// indexes the record again; the key chained behind it in the same slot must stay findable.
func TestRecoveryIndexPutKilledBeforeCount(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	first := "first"
	second := sameSlotKey(t, opts.MaxHashSlotNum, first)
	mid := "mid"
	for i := 0; int(keyHash([]byte("T"), []byte(mid)))%opts.MaxHashSlotNum == int(keyHash([]byte("T"), []byte(first)))%opts.MaxHashSlotNum; i++ {
		mid = fmt.Sprintf("mid%d", i)
	}
	mustPut(t, s, testMsg("T", 0, "a", map[string]string{"KEYS": first}))
	mustPut(t, s, testMsg("T", 0, "m", map[string]string{"KEYS": mid})) // in another slot
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	f := s.idx.files[len(s.idx.files)-1]
	header := append([]byte(nil), f.seg.data[:indexHeaderBytes]...)
	mustPut(t, s, testMsg("T", 0, "b", map[string]string{"KEYS": second}))
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	// Entry and slot written, header not yet: as a put killed before writeHeader leaves it.
	copy(f.seg.data, header)
	crash(s)

	s2 := openStore(t, opts)
	expectHits(t, s2, first, mid, second)
}

// TestRecoveryIndexKilledBetweenKeys: a record with two keys; the process is killed after the
// first key's entry is complete (the header already names the record) but before the second
// key's. Recovery must index the record's second key.
func TestRecoveryIndexKilledBetweenKeys(t *testing.T) {
	opts := testOptions(t, "")
	s := openStore(t, opts)
	mustPut(t, s, testMsg("T", 0, "a", map[string]string{"KEYS": "k0"}))
	mustPut(t, s, testMsg("T", 0, "b", map[string]string{"KEYS": "k1 k2"}))
	if _, err := s.dispatchAvailable(nil); err != nil {
		t.Fatal(err)
	}
	// Undo the last put (k2's): restore its slot and the count.
	f := s.idx.files[len(s.idx.files)-1]
	be := binary.BigEndian
	last := int(f.count) - 1
	pos := indexHeaderBytes + f.slotNum*indexSlotBytes + last*indexEntryBytes
	h := int32(be.Uint32(f.seg.data[pos:]))
	if h != keyHash([]byte("T"), []byte("k2")) {
		t.Fatalf("last entry is not k2's")
	}
	prev := be.Uint32(f.seg.data[pos+16:])
	be.PutUint32(f.seg.data[indexHeaderBytes+int(h)%f.slotNum*indexSlotBytes:], prev)
	if prev == 0 {
		f.slotCount--
	}
	f.count--
	f.writeHeader()
	crash(s)

	s2 := openStore(t, opts)
	expectHits(t, s2, "k0", "k1", "k2")
}
