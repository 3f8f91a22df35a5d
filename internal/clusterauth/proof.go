package clusterauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mqgo/mq/remoting"
)

// The proof's extension fields; part of the format, do not change (doc.go draws it).
const (
	ExtTime  = "mqClusterTime"
	ExtNonce = "mqClusterNonce"
	ExtProof = "mqClusterProof"
)

// domain starts every MAC's content; part of the format.
const domain = "mq-cluster-proof-v1\x00"

// wideDomain starts the MAC of a request whose code does not fit a short: its code is a uint32,
// and its own domain keeps it from ever hashing the bytes of a narrow code's content, while
// every narrow code keeps the format of older builds.
const wideDomain = "mq-cluster-proof-w1\x00"

// nonceBytes is how many random bytes a Prover's nonce carries.
const nonceBytes = 16

// MinSecretBytes is the shortest cluster secret accepted, as replication.MinSecretBytes for
// the HA secret: a shorter one could be guessed offline from one captured proof.
const MinSecretBytes = 16

// CheckSecret reports what is wrong with secret as a cluster secret: empty is allowed (off).
func CheckSecret(secret string) error {
	if secret != "" && len(secret) < MinSecretBytes {
		return fmt.Errorf("ClusterSecret has %d bytes, want none or at least %d", len(secret), MinSecretBytes)
	}
	return nil
}

// macs keeps HMACs already keyed with one secret (the key setup is two SHA-256 blocks, as much
// as hashing a small request), with the scratch space of one computation.
type macs struct{ pool sync.Pool }

type macState struct {
	mac  hash.Hash
	keys []string
	buf  []byte
	sum  []byte
	enc  []byte
}

func newMACs(secret string) *macs {
	key := []byte(secret)
	m := &macs{}
	m.pool.New = func() any { return &macState{mac: hmac.New(sha256.New, key)} }
	return m
}

// covered reports whether the MAC covers extension field k.
func covered(k string) bool {
	switch k {
	case ExtProof, remoting.ExtAccessKey, remoting.ExtSignature, remoting.ExtSecurityToken:
		return false
	}
	return true
}

// compute writes req's MAC into st.sum. The content before the body is gathered in st.buf
// and written once: each Write of a string converted to bytes would allocate.
func (st *macState) compute(req *remoting.Command) {
	st.keys = st.keys[:0]
	for k := range req.ExtFields {
		if covered(k) {
			st.keys = append(st.keys, k)
		}
	}
	slices.Sort(st.keys)
	var b []byte
	if req.Code >= math.MinInt16 && req.Code <= math.MaxInt16 {
		b = append(st.buf[:0], domain...)
		b = binary.BigEndian.AppendUint16(b, uint16(req.Code))
	} else {
		b = append(st.buf[:0], wideDomain...)
		b = binary.BigEndian.AppendUint32(b, uint32(req.Code))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(st.keys)))
	for _, k := range st.keys {
		v := req.ExtFields[k]
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(req.Body)))
	st.mac.Reset()
	st.mac.Write(b)
	st.mac.Write(req.Body)
	st.sum = st.mac.Sum(st.sum[:0])
	clear(st.keys) // do not keep a request's strings alive in the pool
	if cap(b) > 64<<10 {
		b = nil // nor a buffer grown by one huge header
	}
	st.buf = b
}

// Prover adds the cluster proof to requests. Safe for concurrent use.
type Prover struct {
	macs *macs
	now  func() time.Time
}

// NewProver returns a prover for secret, which must not be empty.
func NewProver(secret string) *Prover {
	return &Prover{macs: newMACs(secret), now: time.Now}
}

// Prove sets req's proof fields: the time now, a fresh nonce and the MAC. Proving again (a
// request sent once more) replaces them, so every attempt is a new proof. Any field set after
// Prove other than ACL's must be proven again.
func (p *Prover) Prove(req *remoting.Command) {
	if req.ExtFields == nil {
		req.ExtFields = make(map[string]string, 3)
	}
	var nonce [nonceBytes]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails
	req.ExtFields[ExtTime] = strconv.FormatInt(p.now().UnixMilli(), 10)
	req.ExtFields[ExtNonce] = base64.RawURLEncoding.EncodeToString(nonce[:])
	delete(req.ExtFields, ExtProof)
	st := p.macs.pool.Get().(*macState)
	st.compute(req)
	req.ExtFields[ExtProof] = base64.StdEncoding.EncodeToString(st.sum)
	p.macs.pool.Put(st)
}

// Hook is an RPCHook that proves every request a remoting.Client sends. Give it before ACL's
// signing hook: the signature must cover the proof.
func (p *Prover) Hook() remoting.RPCHook { return proverHook{p} }

type proverHook struct{ p *Prover }

func (h proverHook) BeforeRequest(_ string, req *remoting.Command)  { h.p.Prove(req) }
func (h proverHook) AfterResponse(_ string, _, _ *remoting.Command) {}
