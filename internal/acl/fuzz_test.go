package acl

import (
	"os"
	"strings"
	"testing"

	"github.com/mqgo/mq/remoting"
)

// FuzzParseConfig: Parse and New never panic, and a file that passes both gives a Checker that
// decides any request without panicking.
func FuzzParseConfig(f *testing.F) {
	dist, err := os.ReadFile("../../acl/testdata/plain_acl.yml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(dist)
	f.Add([]byte(aclFile("PUB|SUB")))
	f.Add([]byte("globalWhiteRemoteAddresses: ['*', 192.168.1.{1,2}, '2::ac5:78:1-200:*']\naccounts: []\n"))
	f.Add([]byte("b: &b {secretKey: 12345678, admin: yes}\naccounts: [{<<: *b, accessKey: abcdefg, groupPerms: [g=SUB]}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			return
		}
		c, err := New(cfg)
		if err != nil {
			return
		}
		for _, a := range cfg.Accounts {
			creds := remoting.Credentials{AccessKey: a.AccessKey, SecretKey: a.SecretKey}
			for _, req := range []*remoting.Command{sendV2(creds, "t", "g"), heartbeat(creds, map[string][]string{"g": {"t"}})} {
				if resp := c.Check("192.168.1.2:1", req); resp != nil && strings.Contains(resp.Remark, a.SecretKey) {
					t.Fatalf("remark %q shows the secret", resp.Remark)
				}
			}
		}
	})
}

// FuzzCheckBody: whatever body a signed request carries, Check answers without panicking,
// and refuses a heartbeat or lock body it cannot read.
func FuzzCheckBody(f *testing.F) {
	f.Add(int16(remoting.HeartBeat), []byte(`{"consumerDataSet":[{"groupName":"shipping","subscriptionDataSet":[{"topic":"payments"}]}]}`))
	f.Add(int16(remoting.LockBatchMQ), []byte(`{"consumerGroup":"billing","mqSet":[]}`))
	f.Add(int16(remoting.HeartBeat), []byte(`{"consumerDataSet":null}`))
	c := testChecker(f)
	f.Fuzz(func(t *testing.T, code int16, body []byte) {
		req := signed(producer, code, map[string]string{"topic": "payments", "consumerGroup": "shipping"}, body)
		c.Check(elsewhere, req)
	})
}
