package remoting

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"slices"
	"sync"
)

// The extension fields of RocketMQ's ACL (SessionCredentials): the account a request is signed
// by, its signature, and the optional security token.
const (
	ExtAccessKey     = "AccessKey"
	ExtSignature     = "Signature"
	ExtSecurityToken = "SecurityToken"
	// extUniqueKeyQuery is set by query-by-key requests after signing (MixAll.UNIQUE_MSG_QUERY_FLAG),
	// so brokers leave it out of the signed content.
	extUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
)

// Credentials are a RocketMQ ACL account: requests are signed with SecretKey and name AccessKey.
// The zero value signs nothing.
type Credentials struct {
	AccessKey string
	SecretKey string
}

// IsZero reports whether c has no account to sign with (either key empty, as the official
// clients judge it).
func (c Credentials) IsZero() bool { return c.AccessKey == "" || c.SecretKey == "" }

// Sign adds c's AccessKey and the request's Signature to req.ExtFields, as RocketMQ's ACL
// clients do: HmacSHA1 keyed by SecretKey over the values of every extension field (AccessKey
// among them, Signature not) in the byte order of their names, then the body, in Base64.
// Signing again (a retry) replaces the signature. Zero credentials leave req alone. A caller
// that signs many requests keeps a NewSigner instead, which sets the key up once.
func (c Credentials) Sign(req *Command) {
	if c.IsZero() {
		return
	}
	NewSigner(c).Sign(req)
}

// RequestSignature computes the signature req should carry when signed with secret: the
// content the brokers verify is every extension field but Signature and _UNIQUE_KEY_QUERY.
func RequestSignature(secret []byte, req *Command) string {
	return NewSigner(Credentials{SecretKey: string(secret)}).Signature(req)
}

// SignatureEqual compares two signatures in time independent of where they differ.
func SignatureEqual(got, want string) bool {
	return hmac.Equal([]byte(got), []byte(want))
}

// Signer signs and verifies requests with one account. It keeps MACs already keyed with the
// secret (an HMAC's key setup is two SHA-1 blocks, as much as hashing a small request), so a
// signature costs the hashing of the content only. Safe for concurrent use.
type Signer struct {
	accessKey string
	states    sync.Pool // *signerState
}

// NewSigner returns a signer for c; the secret is copied.
func NewSigner(c Credentials) *Signer {
	key := []byte(c.SecretKey)
	s := &Signer{accessKey: c.AccessKey}
	s.states.New = func() any { return &signerState{mac: hmac.New(newSHA1, key)} }
	return s
}

// Sign adds the signer's AccessKey and the request's Signature to req.ExtFields, as
// Credentials.Sign does.
func (s *Signer) Sign(req *Command) {
	req.materialize(SignatureFields)
	if req.ExtFields == nil {
		req.ExtFields = make(map[string]string, 2)
	}
	req.ExtFields[ExtAccessKey] = s.accessKey
	delete(req.ExtFields, ExtSignature)
	req.ExtFields[ExtSignature] = s.Signature(req)
}

// Signature computes the signature req should carry (see RequestSignature).
func (s *Signer) Signature(req *Command) string {
	st := s.states.Get().(*signerState)
	defer s.states.Put(st)
	return base64.StdEncoding.EncodeToString(st.sum(req))
}

// Verify reports whether req carries the signature of this signer's secret, in time
// independent of where a wrong one differs.
func (s *Signer) Verify(req *Command) bool {
	got, ok := req.ExtFields[ExtSignature]
	if !ok {
		return false
	}
	st := s.states.Get().(*signerState)
	defer s.states.Put(st)
	sum := st.sum(req)
	want := base64.StdEncoding.AppendEncode(st.enc[:0], sum)
	st.enc = want
	return len(got) == len(want) && subtle.ConstantTimeCompare([]byte(got), want) == 1
}

func newSHA1() hash.Hash { return sha1.New() }

// signerState is one keyed MAC and the scratch space of one signature.
type signerState struct {
	mac  hash.Hash
	keys []string
	buf  []byte
	out  []byte
	enc  []byte
}

// sum is the raw MAC of req's signed content; it lies in st until st is used again.
func (st *signerState) sum(req *Command) []byte {
	if !st.contentAsBefore(req.ExtFields) {
		st.keys = st.keys[:0]
		for k := range req.ExtFields {
			if k != ExtSignature && k != extUniqueKeyQuery {
				st.keys = append(st.keys, k)
			}
		}
		slices.Sort(st.keys)
		st.buf = st.buf[:0]
		for _, k := range st.keys {
			st.buf = append(st.buf, req.ExtFields[k]...)
		}
	}
	st.mac.Reset()
	st.mac.Write(st.buf)
	st.mac.Write(req.Body)
	st.out = st.mac.Sum(st.out[:0])
	if cap(st.buf) > 64<<10 {
		st.buf = nil // do not keep a buffer grown by one huge field
	}
	return st.out
}

// contentAsBefore gathers ext's values into st.buf in the order of the keys st sorted last
// time, and reports whether ext has exactly those keys (the requests one signer sees mostly
// share their header's shape), which spares collecting and sorting them again.
func (st *signerState) contentAsBefore(ext map[string]string) bool {
	n := len(ext)
	if _, ok := ext[ExtSignature]; ok {
		n--
	}
	if _, ok := ext[extUniqueKeyQuery]; ok {
		n--
	}
	if n != len(st.keys) || n == 0 {
		return false
	}
	st.buf = st.buf[:0]
	for _, k := range st.keys {
		v, ok := ext[k]
		if !ok {
			return false
		}
		st.buf = append(st.buf, v...)
	}
	return true
}

// SigningHook is an RPCHook that signs every request a Client sends with c.
func SigningHook(c Credentials) RPCHook { return signingHook{NewSigner(c)} }

type signingHook struct{ s *Signer }

func (h signingHook) BeforeRequest(_ string, req *Command)  { h.s.Sign(req) }
func (h signingHook) AfterResponse(_ string, _, _ *Command) {}
