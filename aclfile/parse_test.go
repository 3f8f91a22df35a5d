package aclfile

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/acl"
)

func TestLoadDistributionLayout(t *testing.T) {
	cfg, err := Load("testdata/plain_acl.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := &acl.Config{
		GlobalWhiteRemoteAddresses: []string{"10.20.30.*", "172.16.5.*"},
		Accounts: []acl.Account{
			{
				AccessKey: "Producer01", SecretKey: "87654321", DefaultTopicPerm: "DENY", DefaultGroupPerm: "SUB",
				TopicPerms: []string{"orders=DENY", "payments=PUB|SUB", "audit=SUB"},
				GroupPerms: []string{"billing=DENY", "shipping=PUB|SUB", "reports=SUB"},
			},
			{AccessKey: "operator01", SecretKey: "87654321", WhiteRemoteAddress: "192.168.7.*", Admin: true},
		},
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestParseScalars(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want *acl.Config
	}{
		{"empty file", "", &acl.Config{}},
		{"comments only", "# nothing yet\n", &acl.Config{}},
		{"null document", "~\n", &acl.Config{}},
		{"numbers stay as written", "accounts:\n  - accessKey: 0012345678\n    secretKey: 1.50e3\n",
			&acl.Config{Accounts: []acl.Account{{AccessKey: "0012345678", SecretKey: "1.50e3"}}}},
		{"nulls are empty", "globalWhiteRemoteAddresses: ~\naccounts:\n  - accessKey: null\n    topicPerms:\n",
			&acl.Config{Accounts: []acl.Account{{}}}},
		{"YAML 1.1 booleans", "accounts:\n  - admin: yes\n  - admin: 'True'\n  - admin: off\n  - admin:\n",
			&acl.Config{Accounts: []acl.Account{{Admin: true}, {Admin: true}, {}, {}}}},
		{"unknown keys ignored", "dataVersion: [{counter: 1}]\nextra: {a: b}\naccounts:\n  - accessKey: k\n    colour: red\n",
			&acl.Config{Accounts: []acl.Account{{AccessKey: "k"}}}},
		{"flow style", `{globalWhiteRemoteAddresses: ["1.2.3.4", "*"], accounts: [{accessKey: a, topicPerms: [t=PUB]}]}`,
			&acl.Config{GlobalWhiteRemoteAddresses: []string{"1.2.3.4", "*"},
				Accounts: []acl.Account{{AccessKey: "a", TopicPerms: []string{"t=PUB"}}}}},
		{"anchors, aliases and merge keys",
			"base: &base\n  secretKey: sharedsecret\n  defaultGroupPerm: SUB\n  topicPerms: &perms [a=PUB, b=SUB]\n" +
				"accounts:\n  - <<: *base\n    accessKey: first01\n  - <<: *base\n    accessKey: second01\n    defaultGroupPerm: DENY\n    groupPerms: *perms\n",
			&acl.Config{Accounts: []acl.Account{
				{AccessKey: "first01", SecretKey: "sharedsecret", DefaultGroupPerm: "SUB", TopicPerms: []string{"a=PUB", "b=SUB"}},
				{AccessKey: "second01", SecretKey: "sharedsecret", DefaultGroupPerm: "DENY",
					TopicPerms: []string{"a=PUB", "b=SUB"}, GroupPerms: []string{"a=PUB", "b=SUB"}},
			}}},
		{"later duplicate key wins", "accounts:\n  - accessKey: one\n    accessKey: two\n",
			&acl.Config{Accounts: []acl.Account{{AccessKey: "two"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseErrorsHideValues: what a broken file says must name the place, not the value, which
// could be a secret typed on the wrong line.
func TestParseErrorsHideValues(t *testing.T) {
	const secret = "s3cretValue9"
	cases := []struct{ name, yaml, wantIn string }{
		{"document is a list", "- " + secret + "\n", "mapping"},
		{"document is a scalar", secret + "\n", "mapping"},
		{"accounts is a scalar", "accounts: " + secret + "\n", "accounts"},
		{"account is a scalar", "accounts:\n  - " + secret + "\n", "accounts[0]"},
		{"admin is not a bool", "accounts:\n  - accessKey: k\n    admin: " + secret + "\n", "accounts[0].admin"},
		{"secret is a list", "accounts:\n  - secretKey: [" + secret + "]\n", "accounts[0].secretKey"},
		{"perms is a mapping", "accounts:\n  - topicPerms: {" + secret + ": 1}\n", "accounts[0].topicPerms"},
		{"perm is a mapping", "accounts:\n  - topicPerms: [{" + secret + ": 1}]\n", "accounts[0].topicPerms[0]"},
		{"global list is a scalar", "globalWhiteRemoteAddresses: " + secret + "\n", "globalWhiteRemoteAddresses"},
		{"merge of a scalar", "accounts:\n  - <<: " + secret + "\n", "<<"},
		{"syntax", "accounts:\n  - accessKey: [" + secret + "\n", "yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.wantIn) {
				t.Errorf("error %q does not name %q", err, tc.wantIn)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the value", err)
			}
		})
	}
}

// TestParseAliasBomb: a few lines that alias lists of aliases name more perms than exist; Parse
// must give up rather than walk them all.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("l0: &l0 [a=PUB, a=PUB, a=PUB, a=PUB, a=PUB, a=PUB, a=PUB, a=PUB, a=PUB, a=PUB]\n")
	for i := 1; i <= 8; i++ {
		b.WriteString("l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("accounts: [{accessKey: k, topicPerms: *l8}, {accessKey: j, topicPerms: *l8}]\n")
	if _, err := Parse([]byte(b.String())); err == nil {
		t.Fatal("nested aliases accepted")
	}
	// Lists of aliases to a flat list are fine while the total stays sane.
	flat := "p: &p [a=PUB, b=SUB]\naccounts:\n" + strings.Repeat("  - {accessKey: k, topicPerms: *p}\n", 100)
	cfg, err := Parse([]byte(flat))
	if err != nil || len(cfg.Accounts) != 100 || len(cfg.Accounts[99].TopicPerms) != 2 {
		t.Fatalf("flat aliases: %v", err)
	}
}
