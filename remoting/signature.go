package remoting

import (
	"crypto/hmac"
	"crypto/sha1"
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
// Signing again (a retry) replaces the signature. Zero credentials leave req alone.
func (c Credentials) Sign(req *Command) {
	if c.IsZero() {
		return
	}
	if req.ExtFields == nil {
		req.ExtFields = make(map[string]string, 2)
	}
	req.ExtFields[ExtAccessKey] = c.AccessKey
	delete(req.ExtFields, ExtSignature)
	req.ExtFields[ExtSignature] = RequestSignature([]byte(c.SecretKey), req)
}

// RequestSignature computes the signature req should carry when signed with secret: the
// content the brokers verify is every extension field but Signature and _UNIQUE_KEY_QUERY.
func RequestSignature(secret []byte, req *Command) string {
	s := signers.Get().(*signer)
	defer signers.Put(s)
	s.keys = s.keys[:0]
	for k := range req.ExtFields {
		if k != ExtSignature && k != extUniqueKeyQuery {
			s.keys = append(s.keys, k)
		}
	}
	slices.Sort(s.keys)
	mac := hmac.New(newSHA1, secret)
	for _, k := range s.keys {
		s.buf = append(s.buf[:0], req.ExtFields[k]...)
		mac.Write(s.buf)
	}
	mac.Write(req.Body)
	s.sum = mac.Sum(s.sum[:0])
	return base64.StdEncoding.EncodeToString(s.sum)
}

// SignatureEqual compares two signatures in time independent of where they differ.
func SignatureEqual(got, want string) bool {
	return hmac.Equal([]byte(got), []byte(want))
}

func newSHA1() hash.Hash { return sha1.New() }

// signer holds the scratch space of one signature, reused so that signing a request allocates
// little beyond the MAC.
type signer struct {
	keys []string
	buf  []byte
	sum  []byte
}

var signers = sync.Pool{New: func() any { return new(signer) }}

// SigningHook is an RPCHook that signs every request a Client sends with c.
func SigningHook(c Credentials) RPCHook { return signingHook{c} }

type signingHook struct{ c Credentials }

func (h signingHook) BeforeRequest(_ string, req *Command)  { h.c.Sign(req) }
func (h signingHook) AfterResponse(_ string, _, _ *Command) {}
