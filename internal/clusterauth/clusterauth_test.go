package clusterauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/remoting"
)

const testSecret = "0123456789abcdef-cluster"

// clock is a settable time for provers and verifiers.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newPair(t *testing.T) (*Prover, *Verifier, *clock) {
	t.Helper()
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	p := NewProver(testSecret)
	p.now = c.now
	v := NewVerifier(testSecret)
	v.now = c.now
	return p, v, c
}

func heartbeat() *remoting.Command {
	return remoting.NewRequest(remoting.BrokerHeartbeat, map[string]string{
		"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911",
		"brokerId": "1", "epoch": "3", "maxOffset": "4096"}, nil)
}

// reframe is req as a receiver decodes it: a copy, its map its own.
func reframe(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	out, err := remoting.DecodeFrame(remoting.AppendFrame(nil, req)[4:])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestVerify(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change alters the proven request before the verifier sees it; clk moves the
		// verifier's clock.
		change func(req *remoting.Command)
		clk    time.Duration
		want   error
	}{
		{name: "good", want: nil},
		{name: "good, clocks 2m apart", clk: MaxSkew, want: nil},
		{name: "good, receiver 2m behind", clk: -MaxSkew, want: nil},
		{name: "good, signed by ACL after", change: func(r *remoting.Command) {
			remoting.Credentials{AccessKey: "ops-admin", SecretKey: "secret-key"}.Sign(r)
			r.ExtFields[remoting.ExtSecurityToken] = "token"
		}, want: nil},
		{name: "missing", change: func(r *remoting.Command) {
			delete(r.ExtFields, ExtTime)
			delete(r.ExtFields, ExtNonce)
			delete(r.ExtFields, ExtProof)
		}, want: ErrNoProof},
		{name: "no MAC", change: func(r *remoting.Command) { delete(r.ExtFields, ExtProof) }, want: ErrMalformed},
		{name: "no nonce", change: func(r *remoting.Command) { delete(r.ExtFields, ExtNonce) }, want: ErrMalformed},
		{name: "time not a number", change: func(r *remoting.Command) { r.ExtFields[ExtTime] = "soon" }, want: ErrMalformed},
		{name: "negative time", change: func(r *remoting.Command) { r.ExtFields[ExtTime] = "-1" }, want: ErrMalformed},
		{name: "short nonce", change: func(r *remoting.Command) { r.ExtFields[ExtNonce] = "abc" }, want: ErrMalformed},
		{name: "long nonce", change: func(r *remoting.Command) { r.ExtFields[ExtNonce] = strings.Repeat("a", 65) }, want: ErrMalformed},
		{name: "nonce outside base64url", change: func(r *remoting.Command) { r.ExtFields[ExtNonce] = strings.Repeat("a", 20) + "/\n" }, want: ErrMalformed},
		{name: "MAC not base64", change: func(r *remoting.Command) { r.ExtFields[ExtProof] = strings.Repeat("!", 44) }, want: ErrMismatch},
		{name: "MAC too long", change: func(r *remoting.Command) { r.ExtFields[ExtProof] += "AAAA" }, want: ErrMalformed},
		{name: "stale", clk: MaxSkew + time.Millisecond, want: ErrStale},
		{name: "from the future", clk: -MaxSkew - time.Millisecond, want: ErrStale},
		{name: "code changed", change: func(r *remoting.Command) { r.Code = remoting.ControllerElectMaster }, want: ErrMismatch},
		{name: "code moved past a short", change: func(r *remoting.Command) { r.Code += 1 << 16 }, want: ErrMismatch},
		{name: "body changed", change: func(r *remoting.Command) { r.Body = []byte("{}") }, want: ErrMismatch},
		{name: "ext field changed", change: func(r *remoting.Command) { r.ExtFields["maxOffset"] = "9223372036854775807" }, want: ErrMismatch},
		{name: "ext field added", change: func(r *remoting.Command) { r.ExtFields["electionPriority"] = "0" }, want: ErrMismatch},
		{name: "ext field removed", change: func(r *remoting.Command) { delete(r.ExtFields, "epoch") }, want: ErrMismatch},
		{name: "ext field renamed", change: func(r *remoting.Command) {
			r.ExtFields["epoch2"] = r.ExtFields["epoch"]
			delete(r.ExtFields, "epoch")
		}, want: ErrMismatch},
		{name: "value moved across fields", change: func(r *remoting.Command) {
			// Without lengths, "brokerId=1" "clusterName=DefaultCluster" would hash as
			// "brokerId=1D" "clusterName=efaultCluster".
			r.ExtFields["brokerId"], r.ExtFields["clusterName"] = "1D", "efaultCluster"
		}, want: ErrMismatch},
		{name: "time changed", change: func(r *remoting.Command) {
			ts, _ := strconv.ParseInt(r.ExtFields[ExtTime], 10, 64)
			r.ExtFields[ExtTime] = strconv.FormatInt(ts+1, 10)
		}, want: ErrMismatch},
		{name: "nonce changed", change: func(r *remoting.Command) { r.ExtFields[ExtNonce] = strings.Repeat("A", 22) }, want: ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, v, c := newPair(t)
			req := heartbeat()
			p.Prove(req)
			req = reframe(t, req)
			if tc.change != nil {
				tc.change(req)
			}
			c.t = c.t.Add(tc.clk)
			if err := v.Verify(req); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// A code wider than a short (RocketMQ 5's POP codes) is proven whole: the proof holds for it
// and for no code that shares its low 16 bits.
func TestVerifyWideCode(t *testing.T) {
	p, v, _ := newPair(t)
	req := heartbeat()
	req.Code = 200050
	p.Prove(req)
	alias := reframe(t, req)
	req = reframe(t, req)
	if err := v.Verify(req); err != nil {
		t.Fatalf("wide code: Verify = %v", err)
	}
	alias.Code = 200050 & 0xFFFF
	_, fresh, _ := newPair(t) // one that has not taken the nonce yet, so the MAC decides
	if err := fresh.Verify(alias); !errors.Is(err, ErrMismatch) {
		t.Fatalf("low 16 bits of a wide code: Verify = %v, want %v", err, ErrMismatch)
	}
}

func TestVerifyWrongSecret(t *testing.T) {
	p, _, c := newPair(t)
	v := NewVerifier(testSecret + "!")
	v.now = c.now
	req := heartbeat()
	p.Prove(req)
	if err := v.Verify(req); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Verify = %v, want %v", err, ErrMismatch)
	}
	if n := v.remembered(); n != 0 {
		t.Fatalf("a proof with a wrong MAC was remembered (%d nonces)", n)
	}
}

func TestVerifyReplay(t *testing.T) {
	p, v, c := newPair(t)
	req := heartbeat()
	p.Prove(req)
	frame := remoting.AppendFrame(nil, req)
	decode := func() *remoting.Command {
		r, err := remoting.DecodeFrame(frame[4:])
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if err := v.Verify(decode()); err != nil {
		t.Fatalf("first: %v", err)
	}
	if err := v.Verify(decode()); !errors.Is(err, ErrReplayed) {
		t.Fatalf("replay: %v, want %v", err, ErrReplayed)
	}
	// Replayed under another code: the MAC covers the code, so it never reaches the nonces.
	other := decode()
	other.Code = remoting.ControllerElectMaster
	if err := v.Verify(other); !errors.Is(err, ErrMismatch) {
		t.Fatalf("replay under another code: %v, want %v", err, ErrMismatch)
	}
	// Once out of the window the replay is stale, and its nonce is forgotten.
	c.t = c.t.Add(MaxSkew + time.Millisecond)
	if err := v.Verify(decode()); !errors.Is(err, ErrStale) {
		t.Fatalf("replay after the window: %v, want %v", err, ErrStale)
	}
	fresh := heartbeat()
	p.Prove(fresh)
	if err := v.Verify(fresh); err != nil {
		t.Fatalf("fresh proof after the window: %v", err)
	}
	if n := v.remembered(); n != 1 {
		t.Fatalf("%d nonces remembered, want 1 (the expired one dropped)", n)
	}
}

// TestProveAgain: a request sent twice (a retry) is proven twice, each proof new.
func TestProveAgain(t *testing.T) {
	p, v, _ := newPair(t)
	req := heartbeat()
	p.Prove(req)
	first := maps.Clone(req.ExtFields)
	p.Prove(req)
	if first[ExtNonce] == req.ExtFields[ExtNonce] {
		t.Fatal("the second proof reused the nonce")
	}
	if err := v.Verify(reframe(t, req)); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(reframe(t, req)); !errors.Is(err, ErrReplayed) {
		t.Fatalf("the same attempt twice: %v", err)
	}
	req.ExtFields = first
	if err := v.Verify(reframe(t, req)); err != nil {
		t.Fatalf("the first attempt, arriving late: %v", err)
	}
}

// TestRememberedCap: past the cap the oldest nonces go, and proofs as old as them are refused
// from then on, so a replay of a forgotten proof is never accepted; fresh proofs still pass.
func TestRememberedCap(t *testing.T) {
	p, v, c := newPair(t)
	v.limit = 8
	var proven []*remoting.Command
	for i := range 12 {
		c.t = c.t.Add(time.Millisecond)
		req := heartbeat()
		p.Prove(req)
		proven = append(proven, reframe(t, req))
		if err := v.Verify(reframe(t, req)); err != nil {
			t.Fatalf("proof %d: %v", i, err)
		}
	}
	if n := v.remembered(); n != 8 {
		t.Fatalf("%d nonces remembered, want the cap 8", n)
	}
	for i, req := range proven {
		err := v.Verify(reframe(t, req))
		want := ErrReplayed
		if i < 4 {
			want = ErrForgotten
		}
		if !errors.Is(err, want) {
			t.Errorf("replay of proof %d: %v, want %v", i, err, want)
		}
	}
	c.t = c.t.Add(time.Millisecond)
	req := heartbeat()
	p.Prove(req)
	if err := v.Verify(req); err != nil {
		t.Fatalf("fresh proof at the cap: %v", err)
	}
}

// TestFormat computes the MAC of docs/protocol.md and doc.go independently of the package and
// compares: the bytes are part of the format.
func TestFormat(t *testing.T) {
	p, _, _ := newPair(t)
	req := remoting.NewRequest(remoting.RegisterBroker, map[string]string{"b": "2", "a": "1"}, []byte("body"))
	p.Prove(req)
	req.ExtFields[remoting.ExtAccessKey] = "ak" // left out
	var msg []byte
	msg = append(msg, "mq-cluster-proof-v1\x00"...)
	msg = binary.BigEndian.AppendUint16(msg, uint16(remoting.RegisterBroker))
	keys := []string{"a", "b", ExtNonce, ExtTime}
	slices.Sort(keys)
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(keys)))
	for _, k := range keys {
		msg = binary.BigEndian.AppendUint32(msg, uint32(len(k)))
		msg = append(msg, k...)
		msg = binary.BigEndian.AppendUint32(msg, uint32(len(req.ExtFields[k])))
		msg = append(msg, req.ExtFields[k]...)
	}
	msg = binary.BigEndian.AppendUint32(msg, 4)
	msg = append(msg, "body"...)
	m := hmac.New(sha256.New, []byte(testSecret))
	m.Write(msg)
	if want := base64.StdEncoding.EncodeToString(m.Sum(nil)); req.ExtFields[ExtProof] != want {
		t.Fatalf("proof %s, want %s", req.ExtFields[ExtProof], want)
	}
	if got := req.ExtFields[ExtTime]; got != "1800000000000" {
		t.Fatalf("time %q", got)
	}
	if n, err := base64.RawURLEncoding.DecodeString(req.ExtFields[ExtNonce]); err != nil || len(n) != nonceBytes {
		t.Fatalf("nonce %q: %d bytes, %v", req.ExtFields[ExtNonce], len(n), err)
	}
}

func TestGuard(t *testing.T) {
	g := NewGuard(testSecret)
	p := NewProver(testSecret)
	admin := func(*remoting.Command) bool { return true }
	notAdmin := func(*remoting.Command) bool { return false }
	for _, tc := range []struct {
		name   string
		code   int32
		prove  bool
		admin  func(*remoting.Command) bool
		passes bool
	}{
		{"a send needs nothing", remoting.SendMessage, false, nil, true},
		{"a route lookup needs nothing", remoting.GetRouteInfoByTopic, false, nil, true},
		{"slave sync needs nothing", remoting.GetAllTopicConfig, false, nil, true},
		{"registration unproven", remoting.RegisterBroker, false, admin, false},
		{"registration proven", remoting.RegisterBroker, true, nil, true},
		{"unregistration unproven", remoting.UnregisterBroker, false, nil, false},
		{"data version unproven", remoting.QueryDataVersion, false, nil, false},
		{"heartbeat unproven", remoting.BrokerHeartbeat, false, admin, false},
		{"election unproven", remoting.ControllerElectMaster, false, admin, false},
		{"metadata unproven", remoting.ControllerGetMetadataInfo, false, nil, false},
		{"epoch cache unproven", remoting.GetBrokerEpochCache, false, nil, false},
		{"clean broker data unproven", remoting.CleanBrokerData, false, admin, false},
		{"apply id proven", remoting.ControllerApplyBrokerID, true, nil, true},
		{"topic deletion unproven, ACL off", remoting.DeleteTopicInNamesrv, false, nil, false},
		{"topic deletion unproven, no admin", remoting.DeleteTopicInNamesrv, false, notAdmin, false},
		{"topic deletion by an admin", remoting.DeleteTopicInNamesrv, false, admin, true},
		{"topic deletion proven", remoting.DeleteTopicInNamesrv, true, nil, true},
		{"KV write by an admin", remoting.PutKVConfig, false, admin, true},
		{"KV write unproven", remoting.PutKVConfig, false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := remoting.NewRequest(tc.code, map[string]string{"topic": "T"}, nil)
			if tc.prove {
				p.Prove(req)
			}
			resp := g.Check(req, tc.admin)
			if tc.passes {
				if resp != nil {
					t.Fatalf("refused: %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
				}
				return
			}
			if resp == nil {
				t.Fatal("let through")
			}
			if resp.Code != remoting.NoPermission || !strings.HasPrefix(resp.Remark, "cluster secret could not be verified") {
				t.Fatalf("refused with %s %q", remoting.ResponseCodeName(resp.Code), resp.Remark)
			}
			if strings.Contains(resp.Remark, testSecret) {
				t.Fatalf("remark names the secret: %q", resp.Remark)
			}
		})
	}
	// A bad proof is refused even with an admin's signature: it says something is wrong.
	req := remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "T"}, nil)
	NewProver("another secret of 16+ bytes").Prove(req)
	if resp := g.Check(req, admin); resp == nil || !strings.Contains(resp.Remark, ErrMismatch.Error()) {
		t.Fatalf("a wrong proof with an admin signature: %+v", resp)
	}
}

func TestCheckSecret(t *testing.T) {
	if err := CheckSecret(""); err != nil {
		t.Fatal(err)
	}
	if err := CheckSecret(strings.Repeat("x", MinSecretBytes)); err != nil {
		t.Fatal(err)
	}
	if err := CheckSecret(strings.Repeat("x", MinSecretBytes-1)); err == nil || strings.Contains(err.Error(), "xxx") {
		t.Fatalf("short secret: %v", err)
	}
}

func BenchmarkProve(b *testing.B) {
	p := NewProver(testSecret)
	req := heartbeat()
	b.ReportAllocs()
	for b.Loop() {
		p.Prove(req)
	}
}

func BenchmarkVerify(b *testing.B) {
	p := NewProver(testSecret)
	v := NewVerifier(testSecret)
	reqs := make([]*remoting.Command, 1024)
	for i := range reqs {
		reqs[i] = heartbeat()
		p.Prove(reqs[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// Replays after the first round: the MAC is checked all the same; the nonce check
		// is a map lookup.
		_ = v.Verify(reqs[i%len(reqs)])
		i++
	}
}
