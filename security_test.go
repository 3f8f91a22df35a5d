package mq_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/acltest"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Issue 13 with our own clients: the official client's cases (interop/security_test.go) with
// producer.WithCredentials / consumer.WithCredentials and WithTLS, in-process and over TCP.

const secTopic = acltest.Topic

var (
	secAdmin   = acltest.Admin
	secRW      = acltest.RW
	secSubOnly = acltest.SubOnly
)

// secNode runs a node with ACL and the given TLS mode; certs is nil when TLS is off.
func secNode(t *testing.T, mode mq.TLSMode) (*mq.Node, *tlstest.Certs) {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts := mq.Options{
		Listen:   "127.0.0.1:0",
		Logger:   &l,
		Store:    config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
		HA:       config.HA{Listen: "127.0.0.1:0"},
		Security: config.Security{ACL: acltest.Config(), TLSMode: mode},
	}
	var certs *tlstest.Certs
	if mode != mq.TLSDisabled {
		var err error
		if certs, err = tlstest.New(); err != nil {
			t.Fatal(err)
		}
		opts.Security.TLSConfig = certs.Server()
	}
	n, err := mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, certs
}

// adminRequest sends a request signed by creds straight to the broker.
func adminRequest(t *testing.T, n *mq.Node, tlsCfg *tls.Config, creds remoting.Credentials, req *remoting.Command) *remoting.Command {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{TLSConfig: tlsCfg})
	defer c.Close()
	creds.Sign(req)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, n.BrokerAddr(), req)
	if err != nil {
		t.Fatalf("request %d: %v", req.Code, err)
	}
	return resp
}

func createTopicRequest(topic string) *remoting.Command {
	h := &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: 4,
		WriteQueueNums: 4, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	return remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)
}

// secProducer is our producer reaching n in process or over TCP, signing with creds.
func secProducer(t *testing.T, n *mq.Node, kind string, creds remoting.Credentials, opts ...producer.Option) *producer.Producer {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	base := []producer.Option{producer.WithGroup("sec-pg"), producer.WithLogger(&l),
		producer.WithInstanceName(strings.ReplaceAll(t.Name(), "/", "_") + "-" + creds.AccessKey),
		producer.WithSendTimeout(3 * time.Second)}
	if !creds.IsZero() {
		base = append(base, producer.WithCredentials(creds))
	}
	return kindProducer(t, n, kind, append(base, opts...)...)
}

// secConsumer is our push consumer of secTopic signing with creds, counting bodies.
func secConsumer(t *testing.T, n *mq.Node, kind, group string, creds remoting.Credentials, opts ...consumer.Option) *deliveries {
	t.Helper()
	return kindConsumer(t, n, kind, secTopic, group, append([]consumer.Option{consumer.WithCredentials(creds)}, opts...)...)
}

func send(p *producer.Producer, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, producer.NewMessage(secTopic, []byte(body)))
	return err
}

func isNoPermission(err error) bool {
	var re *remoting.ResponseError
	return errors.As(err, &re) && re.Code == remoting.NoPermission
}

func TestOurClientsACL(t *testing.T) {
	for _, kind := range []string{"tcp", "inproc"} {
		t.Run(kind, func(t *testing.T) {
			n, _ := secNode(t, mq.TLSDisabled)
			if resp := adminRequest(t, n, nil, secRW, createTopicRequest("NotByRW")); resp.Code != remoting.NoPermission {
				t.Fatalf("topic created by a non-admin account: %d %s", resp.Code, resp.Remark)
			}
			if resp := adminRequest(t, n, nil, secAdmin, createTopicRequest(secTopic)); resp.Code != remoting.Success {
				t.Fatalf("create topic as admin: %d %s", resp.Code, resp.Remark)
			}
			del := remoting.NewRequest(remoting.DeleteTopicInBroker, map[string]string{"topic": secTopic}, nil)
			if resp := adminRequest(t, n, nil, secRW, del); resp.Code != remoting.NoPermission {
				t.Fatalf("topic deleted by a non-admin account: %d %s", resp.Code, resp.Remark)
			}

			// The consumer starts first, so its pulls park and are woken by the sends: a woken
			// pull must not be refused (it is not checked twice).
			got := secConsumer(t, n, kind, "sec-cg", secRW)
			before := node.Of(n).ACLRefusals()
			p := secProducer(t, n, kind, secRW)
			var want []string
			for i := range 5 {
				body := fmt.Sprintf("signed-%d", i)
				if err := send(p, body); err != nil {
					t.Fatalf("send with the right credentials: %v", err)
				}
				want = append(want, body)
			}
			got.waitFor(t, want...)
			if r := node.Of(n).ACLRefusals(); r != before {
				t.Fatalf("%d requests of the right account refused", r-before)
			}

			for name, creds := range map[string]remoting.Credentials{
				"wrong-secret": {AccessKey: secRW.AccessKey, SecretKey: "not-the-secret"},
				"none":         {},
				"sub-only":     secSubOnly,
			} {
				if err := send(secProducer(t, n, kind, creds), name); !isNoPermission(err) {
					t.Errorf("send with %s credentials: %v, want NO_PERMISSION", name, err)
				}
			}
		})
	}
}

func TestOurClientsTLS(t *testing.T) {
	for _, mode := range []mq.TLSMode{mq.TLSEnforcing, mq.TLSPermissive} {
		t.Run(string(mode), func(t *testing.T) {
			n, certs := secNode(t, mode)
			if resp := adminRequest(t, n, certs.Client(), secAdmin, createTopicRequest(secTopic)); resp.Code != remoting.Success {
				t.Fatalf("create topic over TLS: %d %s", resp.Code, resp.Remark)
			}
			got := secConsumer(t, n, "tcp", "tls-cg", secRW, consumer.WithTLS(certs.Client()))
			if err := send(secProducer(t, n, "tcp", secRW, producer.WithTLS(certs.Client())), "over-tls"); err != nil {
				t.Fatalf("send over TLS: %v", err)
			}
			got.waitFor(t, "over-tls")

			plainErr := send(secProducer(t, n, "tcp", secRW, producer.WithInstanceName("plain-"+string(mode))), "plaintext")
			switch {
			case mode == mq.TLSEnforcing && plainErr == nil:
				t.Fatal("a plaintext producer sent under enforcing TLS")
			case mode == mq.TLSPermissive && plainErr != nil:
				t.Fatalf("a plaintext producer under permissive TLS: %v", plainErr)
			case mode == mq.TLSPermissive:
				got.waitFor(t, "plaintext")
			}
		})
	}
}

// The name service's writes need an admin account once ACL is on; its reads stay open, and
// the node's own broker (an in-process link) registers without one.
func TestNameServiceWritesNeedAdmin(t *testing.T) {
	n, _ := secNode(t, mq.TLSDisabled)
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	invoke := func(creds remoting.Credentials, req *remoting.Command) *remoting.Command {
		t.Helper()
		creds.Sign(req)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.InvokeSync(ctx, n.NameServerAddr(), req)
		if err != nil {
			t.Fatalf("request %d: %v", req.Code, err)
		}
		return resp
	}
	putKV := func() *remoting.Command {
		return remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "ns", "key": "k", "value": "v"}, nil)
	}
	writes := map[string]func() *remoting.Command{
		"PUT_KV_CONFIG": putKV,
		"DELETE_KV_CONFIG": func() *remoting.Command {
			return remoting.NewRequest(remoting.DeleteKVConfig, map[string]string{"namespace": "ns", "key": "k"}, nil)
		},
		"DELETE_TOPIC_IN_NAMESRV": func() *remoting.Command { return route.BuildDeleteTopic("AnyTopic") },
		"UNREGISTER_BROKER": func() *remoting.Command {
			return route.BuildUnregisterBroker(mq.DefaultClusterName, mq.DefaultBrokerName, n.BrokerAddr(), 0)
		},
	}
	for name, req := range writes {
		for _, creds := range []remoting.Credentials{{}, secRW} {
			if resp := invoke(creds, req()); resp.Code != remoting.NoPermission {
				t.Errorf("%s by %q: %d %s, want NO_PERMISSION", name, creds.AccessKey, resp.Code, resp.Remark)
			}
		}
	}
	// The broker registered at start through its trusted link: its route is there, and an
	// unsigned read gets it.
	if resp := invoke(remoting.Credentials{}, route.BuildGetBrokerClusterInfo()); resp.Code != remoting.Success ||
		!strings.Contains(string(resp.Body), n.BrokerAddr()) {
		t.Fatalf("cluster info: %d %s %s", resp.Code, resp.Remark, resp.Body)
	}
	if resp := invoke(secAdmin, putKV()); resp.Code != remoting.Success {
		t.Fatalf("PUT_KV_CONFIG by the admin: %d %s", resp.Code, resp.Remark)
	}
}

// A refused request costs the client nothing but its answer: the same connection serves the
// next request, signed or from another account, as RocketMQ does.
func TestRefusedRequestKeepsTheConnection(t *testing.T) {
	n, _ := secNode(t, mq.TLSDisabled)
	events := make(chan string, 16)
	c := remoting.NewClient(remoting.ClientOptions{})
	defer c.Close()
	c.OnReconnect(func(addr string) { events <- addr })
	get := func(creds remoting.Credentials) *remoting.Command {
		t.Helper()
		req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": "TBW102", "queueId": "0"}, nil)
		creds.Sign(req)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.InvokeSync(ctx, n.BrokerAddr(), req)
		if err != nil {
			t.Fatalf("GET_MAX_OFFSET: %v", err)
		}
		return resp
	}
	for i, step := range []struct {
		creds remoting.Credentials
		want  int32
	}{
		{remoting.Credentials{}, remoting.NoPermission},
		{secRW, remoting.Success},
		{remoting.Credentials{AccessKey: secRW.AccessKey, SecretKey: "wrong-secret"}, remoting.NoPermission},
		{secSubOnly, remoting.Success},
	} {
		if resp := get(step.creds); resp.Code != step.want {
			t.Fatalf("step %d (%q): %d %s, want %d", i, step.creds.AccessKey, resp.Code, resp.Remark, step.want)
		}
	}
	select {
	case addr := <-events:
		t.Fatalf("the client reconnected to %s after a refusal", addr)
	default:
	}
}
