package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"hash"
	"sync"

	"github.com/mqgo/mq/remoting"
)

// Perm is a permission a gRPC call needs on a resource.
type Perm = perm

// The permissions of RocketMQ 5's gRPC calls (GrpcRequestAclParser and ACL 2.0's
// DefaultAuthorizationContextBuilder): PermAny is Permission.ANY, which either PUB or SUB
// satisfies (a route query).
const (
	PermPub Perm = permPub
	PermSub Perm = permSub
	PermAny Perm = permPub | permSub
)

// Needs collects the resources a gRPC call needs. The zero value needs nothing.
type Needs struct {
	list []need
}

// Topic adds perm p on topic; a retry topic stands for its group, and an empty name adds
// nothing, as for remoting requests.
func (n *Needs) Topic(topic string, p Perm) { n.list = needsTopic(n.list, topic, p) }

// Group adds perm p on a consumer group; an empty name adds nothing.
func (n *Needs) Group(group string, p Perm) { n.list = needsGroup(n.list, group, p) }

// Call is what a gRPC call says about its caller: the 5.x SDKs' authorization metadata,
// parsed.
type Call struct {
	// Peer is the caller's "ip:port", matched against the account's white address.
	Peer string
	// AccessKey names the account; "" for a call that names none.
	AccessKey string
	// Signature is the HMAC-SHA1 the caller sent, raw (the SDKs send it in hex).
	Signature []byte
	// Content is what the caller signed: the value of its x-mq-date-time metadata.
	Content []byte
}

// Refusal is why a gRPC call is refused; its Reason names the account and what was missing,
// never a secret or the expected signature.
type Refusal struct {
	// Unauthenticated: the call does not prove an account (none named, unknown, or a wrong
	// signature). Otherwise the account is proven and lacks a permission.
	Unauthenticated bool
	Reason          string
}

// CheckCall decides a gRPC call as Check decides a remoting request, in the same order: an
// AccessKey naming an account, the account's white address or else its signature over
// call.Content, then each resource in needs. It returns the account's signer, with which the
// endpoint signs the broker requests the call becomes, so the broker checks them as this
// account's too.
//
// Global white addresses admit no gRPC call (RocketMQ 5.1's proxy admits them): the endpoint
// reaches the broker in-process and could not tell the broker who the caller is without an
// account to sign with.
func (c *Checker) CheckCall(call *Call, needs *Needs) (*remoting.Signer, *Refusal) {
	if call.AccessKey == "" {
		return nil, &Refusal{Unauthenticated: true, Reason: "the call is not signed: give the client the AccessKey and SecretKey of an ACL account, which the RocketMQ 5.x SDKs send as the authorization metadata"}
	}
	a := c.accounts[call.AccessKey]
	if a == nil {
		return nil, &Refusal{Unauthenticated: true, Reason: "no account AccessKey=" + call.AccessKey}
	}
	white := false
	if a.white.kind != patternNever {
		peer := lazyPeer{remote: call.Peer}
		white = a.white.match(peer.addr())
	}
	if !white {
		if len(call.Signature) == 0 {
			return nil, &Refusal{Unauthenticated: true, Reason: "signature check failed for AccessKey=" + call.AccessKey + ": the call has no Signature"}
		}
		if !a.verifyContent(call.Content, call.Signature) {
			return nil, &Refusal{Unauthenticated: true, Reason: "signature check failed for AccessKey=" + call.AccessKey +
				": the Signature must be the HMAC-SHA1 of the x-mq-date-time value keyed with the account's SecretKey"}
		}
	}
	var list []need
	if needs != nil {
		list = needs.list
	}
	if isTraceSend(list) {
		return a.signer, nil
	}
	if !a.admin {
		if topic, ok := readsOthers(list); ok {
			return nil, &Refusal{Reason: refuseHeld(a.accessKey, topic).Remark}
		}
	}
	if a.ownsAll {
		return a.signer, nil
	}
	for _, n := range list {
		if !a.owned(n).allows(n.perm) {
			return nil, &Refusal{Reason: a.refuseNeed(n).Remark}
		}
	}
	return a.signer, nil
}

// verifyContent reports whether sig is the HMAC-SHA1 of content keyed with the account's
// secret, comparing in time independent of where a wrong one differs.
func (a *account) verifyContent(content, sig []byte) bool {
	m := a.macs.Get().(hash.Hash)
	defer a.macs.Put(m)
	m.Reset()
	m.Write(content)
	var sum [sha1.Size]byte
	return hmac.Equal(m.Sum(sum[:0]), sig)
}

// newMACs is the pool of HMAC-SHA1 states keyed with secret that verifyContent uses: keying
// one costs as much as hashing the short content.
func newMACs(secret string) *sync.Pool {
	key := []byte(secret)
	return &sync.Pool{New: func() any { return hmac.New(sha1.New, key) }}
}

// CheckCall is Checker.CheckCall with the Checker in effect: (nil, nil) while ACL is off. A
// refusal counts in Refused.
func (g *Guard) CheckCall(call *Call, needs *Needs) (*remoting.Signer, *Refusal) {
	c := g.checker.Load()
	if c == nil {
		return nil, nil
	}
	s, r := c.CheckCall(call, needs)
	if r != nil {
		g.refused.Add(1)
	}
	return s, r
}

// On reports whether a Checker is in effect.
func (g *Guard) On() bool { return g.checker.Load() != nil }
