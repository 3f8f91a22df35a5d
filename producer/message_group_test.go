package producer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/remoting"
)

// sipVectors are SipHash-2-4 outputs under the key 00 01 ... 0f (Guava's and so 5.x's clients'
// key), computed apart from this code with OpenSSL:
//
//	printf '%s' "$in" | openssl mac -macopt hexkey:000102030405060708090a0b0c0d0e0f \
//		-macopt size:8 SIPHASH
//
// which prints the eight bytes low first. The first two are the SipHash paper's (the empty
// message and the bytes 00 to 0e).
var sipVectors = []struct {
	in   string
	want uint64
}{
	{"", 0x726fdb47dd0e0e31},
	{"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e", 0xa129ca6149be45e5},
	{"order-1", 0xc37e18db31b97687},
	{"group-42", 0x1e66a3d7a3383cb9},
	{"0123456789abcdef0123", 0x798b8dd5b522443e},
}

func TestSipHash24Vectors(t *testing.T) {
	for _, v := range sipVectors {
		if got := sipHash24(groupHashK0, groupHashK1, []byte(v.in)); got != v.want {
			t.Errorf("sipHash24(%q) = %#x, want %#x", v.in, got, v.want)
		}
	}
}

// TestGroupQueueIsJavasLongMathMod checks the queue of a group against the hash read as Java's
// signed long and reduced by LongMath.mod (the non-negative remainder), worked out with
// math/big rather than the int64 arithmetic under test, for queue counts that do and do not
// divide 2^64.
func TestGroupQueueIsJavasLongMathMod(t *testing.T) {
	for _, n := range []int{1, 3, 4, 7, 8, 16} {
		queues := make([]MessageQueue, n)
		for i := range queues {
			queues[i] = MessageQueue{Topic: "T", BrokerName: "b", QueueID: i}
		}
		for _, v := range sipVectors {
			signed := new(big.Int).SetUint64(v.want)
			if v.want >= 1<<63 {
				signed.Sub(signed, new(big.Int).Lsh(big.NewInt(1), 64))
			}
			want := int(new(big.Int).Mod(signed, big.NewInt(int64(n))).Int64()) // Euclidean: never negative
			if got := groupQueue(queues, v.in).QueueID; got != want {
				t.Errorf("%d queues, group %q: queue %d, want %d", n, v.in, got, want)
			}
		}
	}
	// A known answer to keep the choice from drifting: 0x...87 is negative as a long, and
	// LongMath.mod(h, 4) is its low two bits, 3.
	four := []MessageQueue{{QueueID: 0}, {QueueID: 1}, {QueueID: 2}, {QueueID: 3}}
	if q := groupQueue(four, "order-1"); q.QueueID != 3 {
		t.Errorf("order-1 over 4 queues: queue %d, want 3", q.QueueID)
	}
}

func TestMessageGroupProperty(t *testing.T) {
	m := NewMessage("T", []byte("x")).WithMessageGroup("g1").WithProperty(message.PropertyMessageGroup, "stale").
		WithProperty(message.PropertyUniqKey, "ID")
	_, props := encodeProperties(m)
	got := message.UnmarshalProperties([]byte(props))
	want := map[string]string{message.PropertyMessageGroup: "g1", message.PropertyUniqKey: "ID"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	// Without a group, a __SHARDINGKEY property given by hand goes through untouched (it is the
	// caller's to set, as 5.x's SDKs would).
	_, props = encodeProperties(NewMessage("T", []byte("x")).WithProperty(message.PropertyMessageGroup, "by-hand"))
	if got := message.UnmarshalProperties([]byte(props))[message.PropertyMessageGroup]; got != "by-hand" {
		t.Errorf("hand-set __SHARDINGKEY = %q, want by-hand", got)
	}
}

func TestMessageGroupValidation(t *testing.T) {
	p := testProducer(newFakeClock(), false)
	msg := func() *Message { return NewMessage("T", []byte("x")) }
	for _, c := range []struct {
		name string
		msg  *Message
		want string // in the error; "" for none
	}{
		{"plain group", msg().WithMessageGroup("orders-17"), ""},
		{"group of the longest length", msg().WithMessageGroup(strings.Repeat("g", MaxMessageGroupLength)), ""},
		{"group too long", msg().WithMessageGroup(strings.Repeat("g", MaxMessageGroupLength+1)), "message group of 65 bytes exceeds 64"},
		{"separator", msg().WithMessageGroup("a\x01b"), "message group contains a separator"},
		{"with a delay level", msg().WithMessageGroup("g").WithDelayTimeLevel(3), "cannot be delayed"},
		{"with a delivery time", msg().WithMessageGroup("g").WithDeliverAfter(1e9), "cannot be delayed"},
		{"with a delay property", msg().WithMessageGroup("g").WithProperty(message.PropertyDelayTimeLevel, "2"), "cannot be delayed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := p.validate(c.msg)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want ErrInvalidMessage saying %q", err, c.want)
			}
		})
	}
	err := p.validateBatch([]*Message{msg().WithMessageGroup("g1"), msg().WithMessageGroup("g2")})
	if !errors.Is(err, ErrInvalidMessage) || !strings.Contains(err.Error(), "mixes message groups") {
		t.Errorf("batch of two groups: %v", err)
	}
	err = p.validateBatch([]*Message{msg().WithMessageGroup("g1"), msg()})
	if !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("batch of a group and none: %v", err)
	}
	if err := p.validateBatch([]*Message{msg().WithMessageGroup("g1"), msg().WithMessageGroup("g1")}); err != nil {
		t.Errorf("batch of one group: %v", err)
	}
}

// TestMessageGroupRetriesOnItsQueue: a send with a group whose first attempt fails is retried
// on the group's queue, never moved to the other broker as a plain send is (the retry policy
// test's first scenario), and each way of sending picks the same queue.
func TestMessageGroupRetriesOnItsQueue(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The first attempt of each send fails (f.sends is emptied between sends).
				f := &fakeNet{attempt: func(n int, _ string) fakeAnswer {
					if n == 0 {
						return fakeAnswer{err: fmt.Errorf("dial: %w", remoting.ErrConnClosed)}
					}
					return fakeAnswer{}
				}}
				p := fakeProducer(t, f)
				defer p.Close()
				pi, err := p.publishInfo(context.Background(), "T")
				if err != nil {
					t.Fatal(err)
				}
				for _, group := range []string{"order-1", "group-42"} {
					f.mu.Lock()
					f.sends = nil
					f.mu.Unlock()
					want := groupQueue(pi.queues, group)
					res, err := d.send(t, p, NewMessage("T", []byte("x")).WithMessageGroup(group))
					if d.name == "oneway" {
						// One attempt, no retry: the failure is the send's.
						if !errors.Is(err, remoting.ErrConnClosed) {
							t.Fatalf("oneway: %v", err)
						}
						if diff := cmp.Diff([]string{want.BrokerName}, f.brokers()); diff != "" {
							t.Fatalf("oneway attempts (-want +got):\n%s", diff)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff([]string{want.BrokerName, want.BrokerName}, f.brokers()); diff != "" {
						t.Errorf("group %s attempts (-want +got):\n%s", group, diff)
					}
					if res.Queue != want {
						t.Errorf("group %s stored in %v, want %v", group, res.Queue, want)
					}
				}
			})
		})
	}
}

// BenchmarkGroupQueue is what a message group adds to a send's queue choice: SipHash of a
// typical group over 8 queues.
func BenchmarkGroupQueue(b *testing.B) {
	queues := make([]MessageQueue, 8)
	for i := range queues {
		queues[i] = MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: i}
	}
	b.ReportAllocs()
	for range b.N {
		groupQueue(queues, "order-1234567")
	}
}
