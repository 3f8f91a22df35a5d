package clusterauth

import (
	"container/heap"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/remoting"
)

// MaxSkew is how far a proof's time may be from the receiver's clock, either way: the clock
// difference between the deployment's machines it tolerates, and how long a captured proof
// would be worth replaying if its nonce were not remembered (it is, for that long).
const MaxSkew = 2 * time.Minute

// maxRemembered caps the nonces a Verifier remembers. Only proofs with a valid MAC enter, so
// only the deployment's own processes fill it: a broker heartbeats each controller once a
// second, and a proof is remembered for at most 2×MaxSkew, so this holds some 270 brokers'
// heartbeats to one controller before the oldest are forgotten (and proofs that old refused).
const maxRemembered = 1 << 16

// Verifier checks cluster proofs and remembers the nonces of those it accepted. Safe for
// concurrent use.
type Verifier struct {
	macs  *macs
	now   func() time.Time
	limit int // maxRemembered; tests lower it

	mu sync.Mutex
	// seen holds the nonce of every accepted proof whose time is still within MaxSkew of now,
	// with that time (ms); byTime orders the same nonces by time, oldest first.
	seen   map[string]int64
	byTime nonceHeap
	// floor (ms): a proof older than this may have had its nonce forgotten at the cap, so it
	// is refused.
	floor int64
}

// NewVerifier returns a verifier for secret, which must not be empty.
func NewVerifier(secret string) *Verifier {
	return &Verifier{macs: newMACs(secret), now: time.Now, limit: maxRemembered, seen: make(map[string]int64)}
}

// Verify checks req's proof: present and well formed, its time within MaxSkew of now, its MAC
// the secret's over req's code, fields and body, its nonce never accepted before. It returns
// nil or one of the Err* values.
func (v *Verifier) Verify(req *remoting.Command) error {
	ts, nonce, mac, err := proofFields(req.ExtFields)
	if err != nil {
		return err
	}
	now := v.now().UnixMilli()
	skew := MaxSkew.Milliseconds()
	if ts < now-skew || ts > now+skew {
		return ErrStale
	}
	st := v.macs.pool.Get().(*macState)
	st.compute(req)
	var ok bool
	st.enc, ok = decodeMAC(st.enc[:0], mac)
	ok = ok && subtle.ConstantTimeCompare(st.enc, st.sum) == 1
	v.macs.pool.Put(st)
	if !ok {
		return ErrMismatch
	}
	return v.remember(nonce, ts, now)
}

// proofFields reads the proof's fields without allocating.
func proofFields(ext map[string]string) (ts int64, nonce, mac string, err error) {
	t, okT := ext[ExtTime]
	nonce, okN := ext[ExtNonce]
	mac, okP := ext[ExtProof]
	if !okT && !okN && !okP {
		return 0, "", "", ErrNoProof
	}
	if !okT || !okN || !okP {
		return 0, "", "", ErrMalformed
	}
	ts, perr := strconv.ParseInt(t, 10, 64)
	if perr != nil || ts < 0 || !validNonce(nonce) || len(mac) != base64.StdEncoding.EncodedLen(32) {
		return 0, "", "", ErrMalformed
	}
	return ts, nonce, mac, nil
}

// validNonce bounds what a nonce may be before it is remembered: 16 to 64 base64url
// characters (ours are 22).
func validNonce(s string) bool {
	if len(s) < 16 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func decodeMAC(dst []byte, s string) ([]byte, bool) {
	out, err := base64.StdEncoding.AppendDecode(dst, []byte(s))
	return out, err == nil
}

// remember records nonce, accepted with time ts (ms) at now, or refuses it as replayed.
func (v *Verifier) remember(nonce string, ts, now int64) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if ts < v.floor {
		return ErrForgotten
	}
	if _, dup := v.seen[nonce]; dup {
		return ErrReplayed
	}
	// Nonces whose time left the window can go: a replay of them is refused as stale.
	expired := now - MaxSkew.Milliseconds()
	for len(v.byTime) > 0 && v.byTime[0].ts < expired {
		delete(v.seen, heap.Pop(&v.byTime).(timedNonce).nonce)
	}
	for len(v.byTime) >= v.limit {
		old := heap.Pop(&v.byTime).(timedNonce)
		delete(v.seen, old.nonce)
		v.floor = max(v.floor, old.ts+1)
	}
	if ts < v.floor {
		return ErrForgotten
	}
	// A copy: the nonce may be a slice of the request's whole header, which must not stay
	// alive for as long as the nonce is remembered.
	nonce = strings.Clone(nonce)
	v.seen[nonce] = ts
	heap.Push(&v.byTime, timedNonce{ts: ts, nonce: nonce})
	return nil
}

// remembered is how many nonces v holds.
func (v *Verifier) remembered() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.seen)
}

type timedNonce struct {
	ts    int64
	nonce string
}

// nonceHeap is a min-heap of nonces by time.
type nonceHeap []timedNonce

func (h nonceHeap) Len() int           { return len(h) }
func (h nonceHeap) Less(i, j int) bool { return h[i].ts < h[j].ts }
func (h nonceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nonceHeap) Push(x any)        { *h = append(*h, x.(timedNonce)) }
func (h *nonceHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = timedNonce{}
	*h = old[:len(old)-1]
	return x
}
