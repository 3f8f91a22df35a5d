package remoting

import "testing"

// The vector was computed outside Go: printf 'RocketMQgroup1topicAhello' | openssl dgst -sha1
// -hmac 12345678 -binary | base64. Field names sort bytewise ("AccessKey" before "a"), values
// concatenate in that order, the body follows.
func TestSignMatchesOpenSSLVector(t *testing.T) {
	req := NewRequest(SendMessageV2, map[string]string{"b": "topicA", "a": "group1"}, []byte("hello"))
	Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}.Sign(req)
	if got, want := req.Ext(ExtSignature), "uBPvCA9ILf6C6yihDxIdCHv4BU0="; got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
	if got := req.Ext(ExtAccessKey); got != "RocketMQ" {
		t.Fatalf("AccessKey %q", got)
	}
	// A second signing (a retry) computes the same, ignoring the signature it replaces.
	Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}.Sign(req)
	if got := req.Ext(ExtSignature); got != "uBPvCA9ILf6C6yihDxIdCHv4BU0=" {
		t.Fatalf("re-signed %q", got)
	}
	// _UNIQUE_KEY_QUERY is not signed content; any other field is.
	req.ExtFields[extUniqueKeyQuery] = "true"
	if got := RequestSignature([]byte("12345678"), req); got != "uBPvCA9ILf6C6yihDxIdCHv4BU0=" {
		t.Fatalf("with _UNIQUE_KEY_QUERY %q", got)
	}
	req.ExtFields["c"] = "x"
	if got := RequestSignature([]byte("12345678"), req); got == "uBPvCA9ILf6C6yihDxIdCHv4BU0=" {
		t.Fatal("a new field did not change the signature")
	}
}

func TestSignNilFieldsAndZeroCredentials(t *testing.T) {
	req := NewRequest(HeartBeat, nil, []byte("{}"))
	Credentials{}.Sign(req)
	if req.ExtFields != nil {
		t.Fatalf("zero credentials signed: %v", req.ExtFields)
	}
	Credentials{AccessKey: "ak", SecretKey: "sk"}.Sign(req)
	if req.Ext(ExtSignature) == "" || req.Ext(ExtAccessKey) != "ak" {
		t.Fatalf("not signed: %v", req.ExtFields)
	}
	if !SignatureEqual(req.Ext(ExtSignature), RequestSignature([]byte("sk"), req)) {
		t.Fatal("signature does not verify")
	}
	if SignatureEqual(req.Ext(ExtSignature), RequestSignature([]byte("other"), req)) {
		t.Fatal("another secret verifies")
	}
}

func TestSignerVerify(t *testing.T) {
	s := NewSigner(Credentials{AccessKey: "ak-123456", SecretKey: "sk-123456"})
	req := NewRequest(SendMessageV2, map[string]string{"a": "g", "b": "T"}, []byte("body"))
	if s.Verify(req) {
		t.Fatal("an unsigned request verified")
	}
	s.Sign(req)
	if !s.Verify(req) {
		t.Fatal("its own signature did not verify")
	}
	if got, want := req.Ext(ExtSignature), RequestSignature([]byte("sk-123456"), req); got != want {
		t.Fatalf("Signer %q, RequestSignature %q", got, want)
	}
	other := NewSigner(Credentials{AccessKey: "ak-123456", SecretKey: "sk-other"})
	if other.Verify(req) {
		t.Fatal("another secret verified")
	}
	req.Body[0] ^= 1
	if s.Verify(req) {
		t.Fatal("a changed body verified")
	}
	req.Body[0] ^= 1
	req.ExtFields[ExtSignature] = req.ExtFields[ExtSignature][:4]
	if s.Verify(req) {
		t.Fatal("a truncated signature verified")
	}
}

func BenchmarkSignerVerifySendV2(b *testing.B) {
	s := NewSigner(Credentials{AccessKey: "ak-123456", SecretKey: "sk-123456"})
	ext := map[string]string{"a": "group", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "1", "f": "0",
		"g": "1764550000000", "h": "0", "i": "UNIQ_KEY\x01ABCDEF0123456789\x02WAIT\x01true\x02", "j": "0",
		"k": "false", "l": "16", "m": "false", "n": "broker-a"}
	req := NewRequest(SendMessageV2, ext, make([]byte, 1024))
	s.Sign(req)
	b.ReportAllocs()
	for b.Loop() {
		if !s.Verify(req) {
			b.Fatal("no")
		}
	}
}

// A signer reuses the key order of the last request it saw; requests of another shape, of the
// same size with other keys, or with the same keys and other values are signed as a fresh
// signer signs them.
func TestSignerAcrossRequestShapes(t *testing.T) {
	creds := Credentials{AccessKey: "ak-123456", SecretKey: "sk-123456"}
	s := NewSigner(creds)
	reqs := []*Command{
		NewRequest(SendMessageV2, map[string]string{"a": "g", "b": "T"}, []byte("1")),
		NewRequest(SendMessageV2, map[string]string{"a": "g", "b": "U"}, []byte("1")),
		NewRequest(SendMessageV2, map[string]string{"a": "g", "c": "T"}, []byte("1")),
		NewRequest(HeartBeat, nil, []byte("{}")),
		NewRequest(SendMessageV2, map[string]string{"a": "g", "b": "T", extUniqueKeyQuery: "true"}, []byte("1")),
		NewRequest(PullMessage, map[string]string{"topic": "T", "consumerGroup": "g", "queueId": "1"}, nil),
	}
	for round := range 3 {
		for i, req := range reqs {
			s.Sign(req)
			if want := NewSigner(creds).Signature(req); req.Ext(ExtSignature) != want {
				t.Fatalf("round %d request %d: signature %q, a fresh signer says %q", round, i, req.Ext(ExtSignature), want)
			}
			if !s.Verify(req) {
				t.Fatalf("round %d request %d does not verify", round, i)
			}
		}
	}
}
