package acl

import (
	"strings"
	"testing"
)

func TestNewValidates(t *testing.T) {
	const secret = "TopSecret42"
	ok := Account{AccessKey: "account1", SecretKey: secret}
	cases := []struct {
		name    string
		edit    func(c *Config)
		wantErr []string // substrings of the error; nil: no error
	}{
		{"valid", func(c *Config) {}, nil},
		{"access key of 6", func(c *Config) { c.Accounts[1].AccessKey = "abcdef" },
			[]string{"accounts[1]", "accessKey", "longer than 6"}},
		{"access key of 7 runes", func(c *Config) { c.Accounts[1].AccessKey = "ééééééé" }, nil},
		{"secret of 6", func(c *Config) { c.Accounts[1].SecretKey = "123456" },
			[]string{`accounts[1] (accessKey "account2")`, "secretKey", "longer than 6"}},
		{"duplicate access key", func(c *Config) { c.Accounts[1].AccessKey = "account1" },
			[]string{"accounts[1]", "already used by accounts[0]"}},
		{"bad default topic perm", func(c *Config) { c.Accounts[1].DefaultTopicPerm = "pub" },
			[]string{"accounts[1]", "defaultTopicPerm", `"pub"`}},
		{"bad default group perm", func(c *Config) { c.Accounts[1].DefaultGroupPerm = "ANY" },
			[]string{"defaultGroupPerm"}},
		{"perm without =", func(c *Config) { c.Accounts[1].TopicPerms = []string{"t=PUB", "orders"} },
			[]string{"topicPerms[1]", `"orders"`}},
		{"perm without name", func(c *Config) { c.Accounts[1].GroupPerms = []string{" =SUB"} },
			[]string{"groupPerms[0]"}},
		{"perm without perm", func(c *Config) { c.Accounts[1].GroupPerms = []string{"g="} },
			[]string{"groupPerms[0]"}},
		{"perm with two =", func(c *Config) { c.Accounts[1].TopicPerms = []string{"a=b=PUB"} },
			[]string{"topicPerms[0]"}},
		{"perm misspelt", func(c *Config) { c.Accounts[1].TopicPerms = []string{"a=PUB|PUB"} },
			[]string{"topicPerms[0]"}},
		{"perms spaced", func(c *Config) { c.Accounts[1].TopicPerms = []string{" a = SUB|PUB "} }, nil},
		{"bad white address", func(c *Config) { c.Accounts[1].WhiteRemoteAddress = "192.168.1" },
			[]string{"accounts[1]", "whiteRemoteAddress", `"192.168.1"`}},
		{"bad global address", func(c *Config) { c.GlobalWhiteRemoteAddresses = []string{"*", "10.0.0.256"} },
			[]string{"globalWhiteRemoteAddresses[1]", `"10.0.0.256"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			second := ok
			second.AccessKey = "account2"
			cfg := &Config{Accounts: []Account{ok, second}}
			tc.edit(cfg)
			_, err := New(cfg)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("New accepted it")
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "123456") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) accepted")
	}
}
