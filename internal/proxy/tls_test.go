package proxy_test

import (
	"context"
	"testing"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/remoting"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// queryOver asks for a route over TLS (tlsOn) or plaintext and reports whether an answer came.
func queryOver(t *testing.T, n *mq.Node, certs *tlstest.Certs, tlsOn bool) bool {
	t.Helper()
	creds := insecure.NewCredentials()
	if tlsOn {
		creds = credentials.NewTLS(certs.Client())
	}
	cc, err := grpc.NewClient(n.GRPCAddr(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "tls-client")
	resp, err := apiv2.NewMessagingServiceClient(cc).QueryRoute(ctx, &apiv2.QueryRouteRequest{Topic: &apiv2.Resource{Name: "NoSuchTopic"}})
	if err != nil {
		t.Logf("tls %v: %v", tlsOn, err)
		return false
	}
	if resp.Status.Code != apiv2.Code_TOPIC_NOT_FOUND {
		t.Fatalf("tls %v: %v", tlsOn, resp.Status)
	}
	return true
}

// The endpoint serves TLS and plaintext on its one port as the node's TLS mode says, telling
// them apart by the first byte as the remoting listeners do.
func TestGRPCTLSModes(t *testing.T) {
	certs, err := tlstest.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode             remoting.TLSMode
		plain, encrypted bool
	}{
		{remoting.TLSDisabled, true, false},
		{remoting.TLSPermissive, true, true},
		{remoting.TLSEnforcing, false, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			n := startNode(t, func(o *mq.Options) {
				o.Security.TLSMode = tc.mode
				if tc.mode != remoting.TLSDisabled {
					o.Security.TLSConfig = certs.Server()
				}
			})
			if got := queryOver(t, n, certs, false); got != tc.plain {
				t.Errorf("plaintext answered: %v, want %v", got, tc.plain)
			}
			if got := queryOver(t, n, certs, true); got != tc.encrypted {
				t.Errorf("TLS answered: %v, want %v", got, tc.encrypted)
			}
		})
	}
}
