package producer_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// BenchmarkProducerSendSyncSecure is BenchmarkProducerSendSync over TCP with ACL (every request
// signed by the producer and verified by the node), TLS (enforcing), both, or neither:
//
//	go test -run '^$' -bench 'SendSyncSecure' -count 6 ./producer | tee secure.txt
//	benchstat -col /mode secure.txt
func BenchmarkProducerSendSyncSecure(b *testing.B) {
	certs, err := tlstest.New()
	if err != nil {
		b.Fatal(err)
	}
	creds := remoting.Credentials{AccessKey: "bench-ak", SecretKey: "bench-secret"}
	for _, mode := range []string{"plain", "acl", "tls", "acl+tls"} {
		b.Run("mode="+mode, func(b *testing.B) {
			withACL := mode == "acl" || mode == "acl+tls"
			withTLS := mode == "tls" || mode == "acl+tls"
			l := zerolog.New(zerolog.NewTestWriter(b)).Level(zerolog.ErrorLevel)
			opts := mq.Options{Listen: "127.0.0.1:0", StoreDir: b.TempDir(), Logger: &l, SegmentBytes: 256 << 20}
			var popts []producer.Option
			if withACL {
				opts.ACL = &mq.ACLConfig{Accounts: []mq.ACLAccount{{AccessKey: creds.AccessKey,
					SecretKey: creds.SecretKey, DefaultTopicPerm: "PUB|SUB", DefaultGroupPerm: "SUB"}}}
				popts = append(popts, producer.WithCredentials(creds))
			}
			if withTLS {
				opts.TLSMode, opts.TLSConfig = mq.TLSEnforcing, certs.Server()
				popts = append(popts, producer.WithTLS(certs.Client()))
			}
			n, err := mq.StartNode(opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { n.Close() })
			seq := sendBenchSeq.Add(1)
			p, err := producer.New(append([]producer.Option{producer.WithNameServers(n.Addr()),
				producer.WithGroup("bench-secure-pg"), producer.WithLogger(&l),
				producer.WithInstanceName(fmt.Sprintf("bench-secure-%d", seq))}, popts...)...)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Close() })
			topic := fmt.Sprintf("BenchSecure_%d", seq)
			ctx := context.Background()
			if _, err := p.SendSync(ctx, producer.NewMessage(topic, []byte("warmup"))); err != nil {
				b.Fatal(err)
			}
			msg := producer.NewMessage(topic, bytes.Repeat([]byte("x"), sendBenchBody)).WithTags("bench")
			b.SetBytes(sendBenchBody)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := p.SendSync(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
