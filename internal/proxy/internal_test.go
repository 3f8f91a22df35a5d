package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc/metadata"
)

// jumpHash is a jump consistent hash: in range, and growing the bucket count by one moves a
// key only to the new bucket — the property that keeps a message group on its queue when a
// topic grows, and that distinguishes it from a plain modulo.
func TestJumpHashIsConsistent(t *testing.T) {
	moved := 0
	for k := range 2000 {
		key := int64(message.JavaStringHash("group-" + strings.Repeat("x", k%7) + string(rune('a'+k%26))))
		key ^= int64(k) << 20
		prev := jumpHash(key, 1)
		if prev != 0 {
			t.Fatalf("one bucket: key %d in %d", key, prev)
		}
		for n := int32(2); n <= 64; n++ {
			b := jumpHash(key, n)
			if b < 0 || b >= n {
				t.Fatalf("key %d, %d buckets: %d", key, n, b)
			}
			if b != prev && b != n-1 {
				t.Fatalf("key %d: %d buckets put it in %d, %d buckets in %d", key, n-1, prev, n, b)
			}
			if b != prev {
				moved++
			}
			prev = b
		}
	}
	if moved == 0 {
		t.Fatal("no key ever moved to a new bucket")
	}
}

func TestTransactionIDRoundTrip(t *testing.T) {
	id := "7F00000100002A9F0000000000001234"
	enc := EncodeTransactionID(id, 42)
	msgID, clOff, qOff, err := DecodeTransactionID(enc)
	if err != nil || msgID != id || clOff != 0x1234 || qOff != 42 {
		t.Fatalf("%q -> %q %d %d %v", enc, msgID, clOff, qOff, err)
	}
	for _, bad := range []string{"", "x", id, id + "-", id + "--1", id + "-abc", "ZZ-1", strings.Repeat("A", 1000) + "-1"} {
		if _, _, _, err := DecodeTransactionID(bad); err == nil {
			t.Errorf("forged transaction id %q decoded", bad)
		}
	}
}

// The registry refuses client ids past its bound, and expiry drops only clients without a
// stream that stayed silent.
func TestClientRegistryBounds(t *testing.T) {
	var made []remoting.Transport
	r := &clients{max: 2, expire: time.Minute, byID: map[string]*client{},
		newTransport: func() remoting.Transport {
			tr := remoting.NewInProcTransport(func(string) *remoting.Dispatcher { return nil }, nil, 0)
			made = append(made, tr)
			return tr
		}}
	defer r.closeAll()
	ctx := func(id string) context.Context {
		return metadata.NewIncomingContext(context.Background(), metadata.Pairs(clientIDHeader, id))
	}
	a, st := r.get(ctx("a"))
	if st != nil {
		t.Fatal(st)
	}
	if _, st := r.get(ctx("b")); st != nil {
		t.Fatal(st)
	}
	if again, st := r.get(ctx("a")); st != nil || again != a {
		t.Fatalf("a second call of client a: %v %v", again, st)
	}
	if _, st := r.get(ctx("c")); st == nil || st.Code != apiv2.Code_TOO_MANY_REQUESTS {
		t.Fatalf("third client: %v", st)
	}
	if _, st := r.get(context.Background()); st == nil || st.Code != apiv2.Code_CLIENT_ID_REQUIRED {
		t.Fatalf("no client id: %v", st)
	}
	if _, st := r.get(ctx(strings.Repeat("i", maxClientIDBytes+1))); st == nil || st.Code != apiv2.Code_BAD_REQUEST {
		t.Fatalf("long client id: %v", st)
	}
	a.mu.Lock()
	a.stream = &telemetryStream{}
	a.mu.Unlock()
	r.expireIdle(time.Now().Add(2 * time.Minute))
	if r.lookup("a") == nil || r.lookup("b") != nil || r.count() != 1 {
		t.Fatalf("after expiry: a %v, b %v, %d clients", r.lookup("a"), r.lookup("b"), r.count())
	}
	if _, st := r.get(ctx("c")); st != nil {
		t.Fatalf("a client after one expired: %v", st)
	}
	if len(made) != 3 {
		t.Fatalf("%d transports made for 3 clients", len(made))
	}
}
