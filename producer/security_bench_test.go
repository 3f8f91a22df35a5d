package producer_test

import (
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
)

// BenchmarkProducerSendSyncSecure is BenchmarkProducerSendSync over TCP with ACL (every request
// signed by the producer and verified by the node), TLS (enforcing), both, or neither; and a
// plaintext producer on a node whose port also takes TLS (permissive), the plaintext path's cost
// of TLS being on:
//
//	go test -run '^$' -bench 'SendSyncSecure' -count 6 ./producer | tee secure.txt
//	benchstat -col /mode secure.txt
func BenchmarkProducerSendSyncSecure(b *testing.B) {
	certs, err := tlstest.New()
	if err != nil {
		b.Fatal(err)
	}
	creds := remoting.Credentials{AccessKey: "bench-ak", SecretKey: "bench-secret"}
	for _, mode := range []string{"plain", "plain@permissive", "acl", "tls", "acl+tls"} {
		b.Run("mode="+mode, func(b *testing.B) {
			withACL := mode == "acl" || mode == "acl+tls"
			withTLS := mode == "tls" || mode == "acl+tls"
			var opts mq.Options
			var popts []producer.Option
			if withACL {
				opts.Security.ACL = &mq.ACLConfig{Accounts: []mq.ACLAccount{{AccessKey: creds.AccessKey,
					SecretKey: creds.SecretKey, DefaultTopicPerm: "PUB|SUB", DefaultGroupPerm: "SUB"}}}
				popts = append(popts, producer.WithCredentials(creds))
			}
			if withTLS {
				opts.Security.TLSMode, opts.Security.TLSConfig = mq.TLSEnforcing, certs.Server()
				popts = append(popts, producer.WithTLS(certs.Client()))
			}
			if mode == "plain@permissive" {
				opts.Security.TLSMode, opts.Security.TLSConfig = mq.TLSPermissive, certs.Server()
			}
			p, topic := sendBenchProducerOn(b, opts, "tcp", popts...)
			benchSendSync(b, p, topic)
		})
	}
}
