package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/internal/tlstest"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// plainACL is a plain_acl.yml giving the user account topicPerm on the topic.
func plainACL(topicPerm string) string {
	return fmt.Sprintf(`globalWhiteRemoteAddresses: []
accounts:
  - accessKey: admin-ak
    secretKey: admin-secret
    admin: true
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
  - accessKey: user-ak
    secretKey: user-secret
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclReload=%s
`, topicPerm)
}

// The ACL file of a running mqnode is reloaded when it changes: a send the file allows
// succeeds, then the file denies it and the same send is refused NO_PERMISSION, then it is
// allowed again; all over TLS on a permissive port, which plaintext requests share.
func TestBinaryACLFileReloadsOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildMqnode(t)
	dir := t.TempDir()
	certs, certFile, keyFile, _ := testCertFiles(t, dir)
	aclFile := filepath.Join(dir, "plain_acl.yml")
	writeACL := func(perm string) {
		// Write beside and rename, as an editor saving the file does, so the node never reads
		// half a file.
		tmp := aclFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(plainACL(perm)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, aclFile); err != nil {
			t.Fatal(err)
		}
	}
	writeACL("PUB|SUB")
	node := startMqnode(t, bin, "-listen", "127.0.0.1:0", "-store", filepath.Join(dir, "store"),
		"-ha-listen", "127.0.0.1:0", "-acl", aclFile,
		"-tls-mode", "permissive", "-tls-cert", certFile, "-tls-key", keyFile)

	secure := remoting.NewClient(remoting.ClientOptions{TLSConfig: certs.Client()})
	defer secure.Close()
	plain := remoting.NewClient(remoting.ClientOptions{})
	defer plain.Close()
	invoke := func(c *remoting.Client, req *remoting.Command, ak, sk string) *remoting.Command {
		t.Helper()
		remoting.Credentials{AccessKey: ak, SecretKey: sk}.Sign(req)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.InvokeSync(ctx, node.broker, req)
		if err != nil {
			t.Fatalf("request %d: %v", req.Code, err)
		}
		return resp
	}
	create := &protocol.CreateTopicRequestHeader{Topic: "AclReload", DefaultTopic: "TBW102", ReadQueueNums: 1,
		WriteQueueNums: 1, Perm: route.PermReadWrite, TopicFilterType: "SINGLE_TAG"}
	newCreate := func() *remoting.Command {
		return remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(create), nil)
	}
	if resp := invoke(secure, newCreate(), "user-ak", "user-secret"); resp.Code != remoting.NoPermission {
		t.Fatalf("topic created by a non-admin account: %d %s", resp.Code, resp.Remark)
	}
	if resp := invoke(secure, newCreate(), "admin-ak", "admin-secret"); resp.Code != remoting.Success {
		t.Fatalf("create topic as admin: %d %s", resp.Code, resp.Remark)
	}
	send := func(c *remoting.Client) *remoting.Command {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "acl-pg", Topic: "AclReload", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
		return invoke(c, remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(&h), []byte("m")), "user-ak", "user-secret")
	}
	for name, c := range map[string]*remoting.Client{"tls": secure, "plaintext": plain} {
		if resp := send(c); resp.Code != remoting.Success {
			t.Fatalf("%s send the file allows: %d %s", name, resp.Code, resp.Remark)
		}
	}
	writeACL("SUB")
	waitFor(t, 10*time.Second, "the reloaded file to refuse the send", func() bool {
		return send(secure).Code == remoting.NoPermission
	})
	if resp := send(plain); resp.Code != remoting.NoPermission {
		t.Fatalf("plaintext send after the reload: %d %s", resp.Code, resp.Remark)
	}
	writeACL("PUB")
	waitFor(t, 10*time.Second, "the send allowed again", func() bool {
		return send(secure).Code == remoting.Success
	})
}

// A broker in another process registers with a name service that enforces TLS and ACL when
// it dials TLS trusting the name service's CA (-tls-client -tls-ca) and signs as an admin
// account (-access-key, MQ_SECRET_KEY); without the account its registration is refused.
func TestBinaryBrokerRegistersWithSecuredNameService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := buildMqnode(t)
	dir := t.TempDir()
	certs, certFile, keyFile, caFile := testCertFiles(t, dir)
	aclFile := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(aclFile, []byte(plainACL("PUB")), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := startMqnode(t, bin, "-listen", "127.0.0.1:0", "-no-broker", "-acl", aclFile,
		"-tls-mode", "enforcing", "-tls-cert", certFile, "-tls-key", keyFile)
	secure := remoting.NewClient(remoting.ClientOptions{TLSConfig: certs.Client()})
	defer secure.Close()
	registered := func(brokerAddr string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := secure.InvokeSync(ctx, ns.namesrv, route.BuildGetBrokerClusterInfo())
		if err != nil || resp.Code != remoting.Success {
			t.Fatalf("cluster info: %v %+v", err, resp)
		}
		return strings.Contains(string(resp.Body), brokerAddr)
	}
	common := []string{"-listen", "127.0.0.1:0", "-no-namesrv", "-namesrv", ns.namesrv, "-ha-listen", "127.0.0.1:0",
		"-tls-client", "-tls-ca", caFile}
	signed := startMqnodeEnv(t, bin, []string{secretKeyEnv + "=admin-secret"}, append(common,
		"-store", filepath.Join(dir, "signed"), "-broker-name", "broker-signed", "-access-key", "admin-ak")...)
	waitFor(t, 10*time.Second, "the signed broker's registration", func() bool { return registered(signed.broker) })
	unsigned := startMqnode(t, bin, append(common,
		"-store", filepath.Join(dir, "unsigned"), "-broker-name", "broker-unsigned")...)
	if registered(unsigned.broker) {
		t.Fatal("a broker without an account registered with a name service under ACL")
	}
}

// testCertFiles makes a test CA and server certificate and writes the certificate, its key and
// the CA's certificate into dir as PEM files.
func testCertFiles(t *testing.T, dir string) (certs *tlstest.Certs, certFile, keyFile, caFile string) {
	t.Helper()
	certs, err := tlstest.New()
	if err != nil {
		t.Fatal(err)
	}
	if certFile, keyFile, err = certs.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, certs.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certs, certFile, keyFile, caFile
}
