package interop

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/acltest"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

// Issue 13 with the official Go client: RocketMQ's plain ACL (its ACLInterceptor signs every
// request) and TLS (its WithTls dials crypto/tls without verifying the certificate).

const aclTopic = acltest.Topic

var (
	aclAdmin   = official(acltest.Admin)
	aclRW      = official(acltest.RW)
	aclSubOnly = official(acltest.SubOnly)
)

// official is an account as the official client takes it.
func official(c remoting.Credentials) primitive.Credentials {
	return primitive.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}
}

func aclConfig() *mq.ACLConfig { return acltest.Config() }

// startSecureNode runs a node with the given ACL (nil: none) and TLS mode (with a fresh
// certificate unless disabled).
func startSecureNode(t *testing.T, cfg *mq.ACLConfig, mode mq.TLSMode) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	opts := mq.Options{
		Listen:   "127.0.0.1:0",
		Logger:   &l,
		Store:    config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
		HA:       config.HA{Listen: "127.0.0.1:0"},
		Security: config.Security{ACL: cfg, TLSMode: mode},
	}
	if mode != "" && mode != mq.TLSDisabled {
		certs, err := tlstest.New()
		if err != nil {
			t.Fatal(err)
		}
		opts.Security.TLSConfig = certs.Server()
	}
	n, err := mq.StartNode(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// officialProducer starts an official producer with the given credentials (zero: none).
func officialProducer(t *testing.T, n *mq.Node, name string, creds primitive.Credentials, useTLS bool) rocketmq.Producer {
	t.Helper()
	return officialProducerAt(t, resolver(n), name, creds, useTLS)
}

func officialProducerAt(t *testing.T, ns primitive.NsResolver, name string, creds primitive.Credentials, useTLS bool) rocketmq.Producer {
	t.Helper()
	opts := []producer.Option{producer.WithNsResolver(ns), producer.WithGroupName("acl-pg"),
		producer.WithInstanceName(t.Name() + "-" + name), producer.WithRetry(1), producer.WithSendMsgTimeout(3 * time.Second)}
	if creds.AccessKey != "" {
		opts = append(opts, producer.WithCredentials(creds))
	}
	if useTLS {
		opts = append(opts, producer.WithTls(true))
	}
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// officialAdmin is the official admin client signing with creds.
func officialAdmin(t *testing.T, n *mq.Node, creds primitive.Credentials, useTLS bool) admin.Admin {
	t.Helper()
	opts := []admin.AdminOption{admin.WithResolver(resolver(n)), admin.WithCredentials(creds)}
	if useTLS {
		opts = append(opts, admin.WithTls(true))
	}
	adm, err := admin.NewAdmin(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })
	// The official admin signs its requests only once its ACL interceptor is registered, which
	// only GetAllSubscriptionGroup does (client v2.1.3): without this call its CreateTopic and
	// DeleteTopic go unsigned, against Apache brokers too.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := adm.GetAllSubscriptionGroup(ctx, n.BrokerAddr(), 3*time.Second); err != nil {
		t.Logf("GetAllSubscriptionGroup (to register the admin's signing): %v", err)
	}
	return adm
}

func createTopicAs(t *testing.T, n *mq.Node, adm admin.Admin, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The official admin returns only transport errors: whether the broker refused the topic
	// shows in its topic table (brokerTopics).
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(n.BrokerAddr()),
		admin.WithReadQueueNums(4), admin.WithWriteQueueNums(4)); err != nil {
		t.Fatal(err)
	}
}

// brokerTopics reads the broker's topic table with a request signed by the admin account.
func brokerTopics(t *testing.T, n *mq.Node, tlsCfg bool) map[string]json.RawMessage {
	t.Helper()
	copts := remoting.ClientOptions{}
	if tlsCfg {
		copts.TLSConfig = insecureTLS()
	}
	c := remoting.NewClient(copts)
	defer c.Close()
	req := remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil)
	remoting.Credentials{AccessKey: aclAdmin.AccessKey, SecretKey: aclAdmin.SecretKey}.Sign(req)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, n.BrokerAddr(), req)
	if err != nil || resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_TOPIC_CONFIG: %v %+v", err, resp)
	}
	var body struct {
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.TopicConfigTable
}

// noPermission reports whether err is the broker's NO_PERMISSION answer; the official
// producer reports a refused send as the text "CODE: 16, DESC: <remark>".
func noPermission(err error) bool {
	return err != nil && strings.Contains(err.Error(), fmt.Sprintf("CODE: %d,", remoting.NoPermission))
}

func sendOne(p rocketmq.Producer, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage(aclTopic, []byte(body)))
	if err == nil && res.Status != primitive.SendOK {
		return fmt.Errorf("send status %v", res.Status)
	}
	return err
}

// consumeAs starts an official push consumer of aclTopic signed with creds and returns what it
// receives.
func consumeAs(t *testing.T, n *mq.Node, creds primitive.Credentials, useTLS bool, group string) *collector {
	t.Helper()
	return consumeAt(t, resolver(n), creds, useTLS, group)
}

func consumeAt(t *testing.T, ns primitive.NsResolver, creds primitive.Credentials, useTLS bool, group string) *collector {
	t.Helper()
	opts := []consumer.Option{consumer.WithNsResolver(ns), consumer.WithGroupName(group),
		consumer.WithInstance(t.Name() + "-" + group), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithCredentials(creds)}
	if useTLS {
		opts = append(opts, consumer.WithTls(true))
	}
	c, err := rocketmq.NewPushConsumer(opts...)
	if err != nil {
		t.Fatal(err)
	}
	got := newCollector()
	if err := c.Subscribe(aclTopic, consumer.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			got.add(msgs...)
			return consumer.ConsumeSuccess, nil
		}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown() })
	return got
}

func TestOfficialClientACL(t *testing.T) {
	n := startSecureNode(t, aclConfig(), mq.TLSDisabled)

	// A non-admin account cannot create or delete topics; the admin account can.
	createTopicAs(t, n, officialAdmin(t, n, aclRW, false), "NotByRW")
	if _, ok := brokerTopics(t, n, false)["NotByRW"]; ok {
		t.Fatal("a non-admin account created a topic")
	}
	createTopicAs(t, n, officialAdmin(t, n, aclAdmin, false), aclTopic)
	if _, ok := brokerTopics(t, n, false)[aclTopic]; !ok {
		t.Fatal("the admin account could not create a topic")
	}
	waitRoute(t, n, aclTopic)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = officialAdmin(t, n, aclRW, false).DeleteTopic(ctx, admin.WithTopicDelete(aclTopic),
		admin.WithBrokerAddrDelete(n.BrokerAddr()))
	if _, ok := brokerTopics(t, n, false)[aclTopic]; !ok {
		t.Fatal("a non-admin account deleted a topic")
	}

	// The right credentials send and consume.
	if err := sendOne(officialProducer(t, n, "rw", aclRW, false), "signed"); err != nil {
		t.Fatalf("send with the right credentials: %v", err)
	}
	got := consumeAs(t, n, aclRW, false, "acl-cg")
	got.waitFor(t, "the signed message", func(m []*primitive.MessageExt) bool {
		return len(m) == 1 && string(m[0].Body) == "signed"
	})

	// A wrong secret, no credentials, and an account with SUB only are refused NO_PERMISSION.
	for name, creds := range map[string]primitive.Credentials{
		"wrong-secret": {AccessKey: aclRW.AccessKey, SecretKey: "not-the-secret"},
		"none":         {},
		"sub-only":     aclSubOnly,
	} {
		err := sendOne(officialProducer(t, n, name, creds, false), name)
		if !noPermission(err) {
			t.Errorf("send with %s credentials: %v, want NO_PERMISSION", name, err)
		}
	}
}

func insecureTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} // the official client's WithTls does the same
}

// tlsChildEnv carries the name server address to TestOfficialClientTLSChild.
const tlsChildEnv = "MQ_INTEROP_TLS_NAMESRV"

// The official client's WithTls sets UseTls in a configuration all its clients of the process
// share (remote.DefaultRemotingClientConfig, client v2.1.3): once one client has it, every
// client made later dials TLS, and turning it off again would make the earlier ones dial
// plaintext when they reconnect. So its TLS clients run in a child process of their own
// (TestOfficialClientTLSChild), while plaintext clients stay here.
func TestOfficialClientTLS(t *testing.T) {
	for _, mode := range []mq.TLSMode{mq.TLSEnforcing, mq.TLSPermissive} {
		t.Run(string(mode), func(t *testing.T) {
			n := startSecureNode(t, aclConfig(), mode)
			createTopicSigned(t, n)
			waitRouteWith(t, n, aclTopic, remoting.ClientOptions{TLSConfig: insecureTLS()})

			child := exec.Command(os.Args[0], "-test.run=^TestOfficialClientTLSChild$", "-test.count=1")
			child.Env = append(os.Environ(), tlsChildEnv+"="+n.Addr())
			if out, err := child.CombinedOutput(); err != nil {
				t.Fatalf("official TLS clients: %v\n%s", err, out)
			}

			plainErr := sendOne(officialProducer(t, n, "plain", aclRW, false), "plaintext")
			switch {
			case mode == mq.TLSEnforcing && plainErr == nil:
				t.Fatal("a plaintext client sent under enforcing TLS")
			case mode == mq.TLSPermissive && plainErr != nil:
				t.Fatalf("a plaintext client under permissive TLS: %v", plainErr)
			case mode == mq.TLSPermissive:
				got := consumeAs(t, n, aclRW, false, "plain-cg")
				got.waitFor(t, "both messages", func(m []*primitive.MessageExt) bool { return len(m) >= 2 })
				if b := bodies(settle(got)); fmt.Sprint(b) != "[over-tls plaintext]" {
					t.Fatalf("plaintext consumer got %v", b)
				}
			}
		})
	}
}

// TestOfficialClientTLSChild is TestOfficialClientTLS's child: an official producer and push
// consumer with WithTls(true) and credentials send a message and consume it.
func TestOfficialClientTLSChild(t *testing.T) {
	addr := os.Getenv(tlsChildEnv)
	if addr == "" {
		t.Skip("run by TestOfficialClientTLS")
	}
	n := &remoteNode{addr: addr}
	p := officialProducerAt(t, n.resolver(), "tls", aclRW, true)
	if err := sendOne(p, "over-tls"); err != nil {
		t.Fatalf("send over TLS: %v", err)
	}
	got := consumeAt(t, n.resolver(), aclRW, true, "tls-cg")
	got.waitFor(t, "the message sent over TLS", func(m []*primitive.MessageExt) bool {
		return len(m) == 1 && string(m[0].Body) == "over-tls"
	})
}

// remoteNode is a node of another process, known by its address.
type remoteNode struct{ addr string }

func (r *remoteNode) resolver() primitive.NsResolver {
	return primitive.NewPassthroughResolver([]string{r.addr})
}

// createTopicSigned creates aclTopic with a request signed by the admin account, over TLS.
func createTopicSigned(t *testing.T, n *mq.Node) {
	t.Helper()
	c := remoting.NewClient(remoting.ClientOptions{TLSConfig: insecureTLS()})
	defer c.Close()
	h := &protocol.CreateTopicRequestHeader{Topic: aclTopic, DefaultTopic: "TBW102", ReadQueueNums: 4,
		WriteQueueNums: 4, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	req := remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil)
	remoting.Credentials{AccessKey: aclAdmin.AccessKey, SecretKey: aclAdmin.SecretKey}.Sign(req)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if resp, err := c.InvokeSync(ctx, n.BrokerAddr(), req); err != nil || resp.Code != remoting.Success {
		t.Fatalf("create %s: %v %+v", aclTopic, err, resp)
	}
}
