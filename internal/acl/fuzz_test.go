package acl

import (
	"os"
	"slices"
	"testing"

	"github.com/mqgo/mq/aclfile"
	"github.com/mqgo/mq/remoting"
)

// FuzzParseConfig: Parse and New never panic, and a file that passes both gives a Checker that
// decides any request without panicking, with remarks that do not depend on any secret: the
// same configuration with every secret changed answers the same requests (each signed with
// its own configuration's secret) with the same remarks. (A remark may contain the secret's
// text by coincidence, as when it equals the AccessKey; it never carries it.)
func FuzzParseConfig(f *testing.F) {
	dist, err := os.ReadFile("../../aclfile/testdata/plain_acl.yml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(dist)
	f.Add([]byte(aclFile("PUB|SUB")))
	f.Add([]byte("globalWhiteRemoteAddresses: ['*', 192.168.1.{1,2}, '2::ac5:78:1-200:*']\naccounts: []\n"))
	f.Add([]byte("b: &b {secretKey: 12345678, admin: yes}\naccounts: [{<<: *b, accessKey: abcdefg, groupPerms: [g=SUB]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := aclfile.Parse(data)
		if err != nil {
			return
		}
		c, err := New(cfg)
		if err != nil {
			return
		}
		other := *cfg
		other.Accounts = slices.Clone(cfg.Accounts)
		for i := range other.Accounts {
			other.Accounts[i].SecretKey += "-other"
		}
		c2, err := New(&other)
		if err != nil {
			t.Fatalf("the configuration with other secrets: %v", err)
		}
		remark := func(resp *remoting.Command) string {
			if resp == nil {
				return "allowed"
			}
			return resp.Remark
		}
		for i, a := range cfg.Accounts {
			creds := remoting.Credentials{AccessKey: a.AccessKey, SecretKey: a.SecretKey}
			creds2 := remoting.Credentials{AccessKey: a.AccessKey, SecretKey: other.Accounts[i].SecretKey}
			for _, mk := range []func(remoting.Credentials) *remoting.Command{
				func(c remoting.Credentials) *remoting.Command { return sendV2(c, "t", "g") },
				func(c remoting.Credentials) *remoting.Command { return heartbeat(c, map[string][]string{"g": {"t"}}) },
			} {
				got, got2 := remark(c.Check("192.168.1.2:1", mk(creds))), remark(c2.Check("192.168.1.2:1", mk(creds2)))
				if got != got2 {
					t.Fatalf("the remark depends on the secret: %q with one, %q with another", got, got2)
				}
			}
		}
	})
}

// FuzzCheckBody: whatever body a signed request carries, Check answers without panicking,
// and refuses a heartbeat or lock body it cannot read.
func FuzzCheckBody(f *testing.F) {
	f.Add(int32(remoting.HeartBeat), []byte(`{"consumerDataSet":[{"groupName":"shipping","subscriptionDataSet":[{"topic":"payments"}]}]}`))
	f.Add(int32(remoting.LockBatchMQ), []byte(`{"consumerGroup":"billing","mqSet":[]}`))
	f.Add(int32(remoting.HeartBeat), []byte(`{"consumerDataSet":null}`))
	c := testChecker(f)
	f.Fuzz(func(t *testing.T, code int32, body []byte) {
		req := signed(producer, code, map[string]string{"topic": "payments", "consumerGroup": "shipping"}, body)
		c.Check(elsewhere, req)
	})
}
