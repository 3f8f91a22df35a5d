package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/names"
)

func callChecker(t *testing.T) *Checker {
	t.Helper()
	c, err := New(&Config{
		GlobalWhiteRemoteAddresses: []string{"10.9.*.*"},
		Accounts: []Account{
			{AccessKey: "grpcUser01", SecretKey: "grpcSecret01", DefaultTopicPerm: "DENY", DefaultGroupPerm: "DENY",
				TopicPerms: []string{"Orders=PUB", "Events=SUB", "%RETRY%Billing=SUB"}, GroupPerms: []string{"Shipping=SUB"}},
			{AccessKey: "grpcWhite1", SecretKey: "grpcSecret02", WhiteRemoteAddress: "192.168.7.*", DefaultTopicPerm: "PUB|SUB"},
			{AccessKey: "grpcAdmin1", SecretKey: "grpcSecret03", Admin: true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func signedCall(peer, ak, sk, content string) *Call {
	m := hmac.New(sha1.New, []byte(sk))
	m.Write([]byte(content))
	return &Call{Peer: peer, AccessKey: ak, Signature: m.Sum(nil), Content: []byte(content)}
}

func TestCheckCall(t *testing.T) {
	c := callChecker(t)
	const dt = "20261201T120000Z"
	user := signedCall("10.1.1.1:3000", "grpcUser01", "grpcSecret01", dt)
	needs := func(f func(*Needs)) *Needs { n := &Needs{}; f(n); return n }
	cases := []struct {
		name   string
		call   *Call
		needs  *Needs
		unauth bool
		reason string // "" admits
	}{
		{"publish", user, needs(func(n *Needs) { n.Topic("Orders", PermPub) }), false, ""},
		{"route with PUB only", user, needs(func(n *Needs) { n.Topic("Orders", PermAny) }), false, ""},
		{"route with SUB only", user, needs(func(n *Needs) { n.Topic("Events", PermAny) }), false, ""},
		{"route of a DENY topic", user, needs(func(n *Needs) { n.Topic("Secret", PermAny) }), false, "AccessKey=grpcUser01 has no PUB|SUB permission on topic Secret"},
		{"receive", user, needs(func(n *Needs) { n.Group("Shipping", PermSub); n.Topic("Events", PermSub) }), false, ""},
		{"receive, group denied", user, needs(func(n *Needs) { n.Group("Other", PermSub); n.Topic("Events", PermSub) }), false, "no SUB permission on group Other"},
		{"retry topic is its group", user, needs(func(n *Needs) { n.Topic("%RETRY%Billing", PermSub) }), false, ""},
		{"subscribe to a publish-only topic", user, needs(func(n *Needs) { n.Topic("Orders", PermSub) }), false, "no SUB permission on topic Orders"},
		{"held topic needs admin", user, needs(func(n *Needs) { n.Topic(names.TopicSchedule, PermSub) }), false, names.TopicSchedule},
		{"trace needs nothing", user, needs(func(n *Needs) { n.Topic(names.TopicTrace, PermPub) }), false, ""},
		{"no needs", user, nil, false, ""},
		{"empty names need nothing", user, needs(func(n *Needs) { n.Topic("", PermPub); n.Group("", PermSub) }), false, ""},
		{"admin owns all", signedCall("10.1.1.1:1", "grpcAdmin1", "grpcSecret03", dt), needs(func(n *Needs) { n.Topic(names.TopicSchedule, PermSub) }), false, ""},

		{"unsigned", &Call{Peer: "10.1.1.1:1"}, nil, true, "not signed"},
		{"unsigned from a global white address", &Call{Peer: "10.9.0.1:1"}, nil, true, "not signed"},
		{"unknown account", signedCall("10.1.1.1:1", "nobody0001", "grpcSecret01", dt), nil, true, "no account AccessKey=nobody0001"},
		{"wrong secret", signedCall("10.1.1.1:1", "grpcUser01", "grpcSecret02", dt), nil, true, "signature check failed for AccessKey=grpcUser01"},
		{"signature of other content", &Call{Peer: "10.1.1.1:1", AccessKey: "grpcUser01", Signature: user.Signature, Content: []byte("20261201T120001Z")}, nil, true, "signature check failed"},
		{"no signature", &Call{Peer: "10.1.1.1:1", AccessKey: "grpcUser01", Content: []byte(dt)}, nil, true, "no Signature"},
		{"truncated signature", &Call{Peer: "10.1.1.1:1", AccessKey: "grpcUser01", Signature: user.Signature[:10], Content: []byte(dt)}, nil, true, "signature check failed"},

		{"account white address skips the signature", &Call{Peer: "192.168.7.20:1", AccessKey: "grpcWhite1"}, nil, false, ""},
		{"outside the account's white address", &Call{Peer: "192.168.8.20:1", AccessKey: "grpcWhite1"}, nil, true, "no Signature"},
	}
	for _, tc := range cases {
		signer, r := c.CheckCall(tc.call, tc.needs)
		if tc.reason == "" {
			if r != nil {
				t.Errorf("%s: refused: %+v", tc.name, r)
			} else if signer == nil {
				t.Errorf("%s: admitted without a signer", tc.name)
			}
			continue
		}
		if r == nil {
			t.Errorf("%s: admitted", tc.name)
			continue
		}
		if r.Unauthenticated != tc.unauth || !strings.Contains(r.Reason, tc.reason) {
			t.Errorf("%s: %+v, want unauthenticated=%v and %q", tc.name, r, tc.unauth, tc.reason)
		}
		if strings.Contains(r.Reason, "grpcSecret") {
			t.Errorf("%s: reason names a secret: %s", tc.name, r.Reason)
		}
	}

	var g Guard
	if s, r := g.CheckCall(&Call{}, nil); s != nil || r != nil || g.On() {
		t.Fatal("a guard without a checker checks calls")
	}
	g.Store(c)
	if _, r := g.CheckCall(&Call{}, nil); r == nil || g.Refused() != 1 {
		t.Fatalf("refusal %v counted %d", r, g.Refused())
	}
}
