package aclfile

import (
	"reflect"
	"testing"

	"github.com/mqgo/mq/acl"
)

// TestFormatRoundTrip: what Format writes, Parse reads back the same, values that look like
// numbers, booleans or YAML syntax included.
func TestFormatRoundTrip(t *testing.T) {
	for _, cfg := range []acl.Config{
		{},
		{GlobalWhiteRemoteAddresses: []string{"10.10.103.*", "192.168.0.{1,2}"}, Accounts: []acl.Account{
			{AccessKey: "RocketMQ", SecretKey: "12345678", WhiteRemoteAddress: "192.168.0.*", DefaultTopicPerm: "DENY",
				DefaultGroupPerm: "SUB", TopicPerms: []string{"topicA=DENY", "topicB=PUB|SUB"}, GroupPerms: []string{"groupA=DENY"}},
			{AccessKey: "true", SecretKey: "- a: [b] #c", Admin: true},
		}},
	} {
		data, err := Format(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !reflect.DeepEqual(normalized(*got), normalized(cfg)) {
			t.Errorf("round trip of %+v:\n%s\ngave %+v", cfg, data, *got)
		}
	}
}

// normalized makes nil lists empty, which the file cannot tell apart.
func normalized(cfg acl.Config) acl.Config {
	orEmpty := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	out := acl.Config{GlobalWhiteRemoteAddresses: orEmpty(cfg.GlobalWhiteRemoteAddresses), Accounts: []acl.Account{}}
	for _, a := range cfg.Accounts {
		a.TopicPerms, a.GroupPerms = orEmpty(a.TopicPerms), orEmpty(a.GroupPerms)
		out.Accounts = append(out.Accounts, a)
	}
	return out
}
