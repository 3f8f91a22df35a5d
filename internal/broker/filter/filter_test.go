package filter

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
)

func TestSubscriptionCompile(t *testing.T) {
	record := func(tags string) []byte {
		props := map[string]string{}
		if tags != "" {
			props[message.PropertyTags] = tags
		}
		m := &message.Message{Topic: "T", Body: []byte("b"), Properties: message.MarshalProperties(props),
			BornHost: testBornHost, StoreHost: testBornHost}
		size, err := message.RecordSize(m)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, size)
		message.EncodeRecord(buf, size, m, 0, 0, 0)
		return buf
	}
	matches := func(s *Subscription, tags string) bool {
		f := s.Filter()
		if f == nil {
			return true
		}
		return f.IsMatchedByConsumeQueue(message.TagsHashCode(tags)) && f.IsMatchedByCommitLog(record(tags))
	}
	cases := []struct {
		name string
		sub  *Subscription
		yes  []string
		no   []string
	}{
		{"star", New(protocol.SubscriptionData{SubString: "*"}), []string{"a", ""}, nil},
		{"empty", Parse("T", "", ""), []string{"a", ""}, nil},
		{"tags", Parse("T", " a || b ||", "TAG"), []string{"a", "b"}, []string{"c", "", "a||b"}},
		{"non-ASCII, Go client codes", New(protocol.SubscriptionData{SubString: "é", TagsSet: []string{"é"},
			CodeSet: protocol.TagCodes{6214}}), []string{"é"}, []string{"e"}},
		{"collision", Parse("T", "Aa", ""), []string{"Aa"}, []string{"BB"}},
		{"Java codes only", New(protocol.SubscriptionData{SubString: "x",
			CodeSet: protocol.TagCodes{int32(message.TagsHashCode("x"))}}), []string{"x"}, []string{"y"}},
		{"subString only", New(protocol.SubscriptionData{SubString: "x || y"}), []string{"x", "y"}, []string{"z"}},
		// TAGS is a property like any other to SQL92.
		{"SQL92", Parse("T", "TAGS IN ('a', 'b') OR TAGS IS NULL", "SQL92"), []string{"a", "b", ""}, []string{"c"}},
		{"class filter", New(protocol.SubscriptionData{SubString: "a", ClassFilterMode: true}), []string{"b"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, tag := range c.yes {
				if !matches(c.sub, tag) {
					t.Errorf("%q not matched", tag)
				}
			}
			for _, tag := range c.no {
				if matches(c.sub, tag) {
					t.Errorf("%q matched", tag)
				}
			}
		})
	}
}

// BenchmarkSubscriptionMatch is the broker's filter cost per message read by a pull, by
// subscription kind, over a record with 10 user properties and a tag (issue 14: SQL92 filter
// cost per message):
//
//	go test -run '^$' -bench SubscriptionMatch ./internal/broker/filter
func BenchmarkSubscriptionMatch(b *testing.B) {
	props := map[string]string{message.PropertyTags: "TagA", message.PropertyUniqKey: "0A0B0C0D00002A9F0000000000000001"}
	for i := range 10 {
		props[fmt.Sprintf("p%d", i)] = strconv.Itoa(i * 7)
	}
	props["region"] = "eu-west"
	m := &message.Message{Topic: "T", Body: make([]byte, 1024), Properties: message.MarshalProperties(props),
		BornHost: testBornHost, StoreHost: testBornHost}
	size, err := message.RecordSize(m)
	if err != nil {
		b.Fatal(err)
	}
	record := make([]byte, size)
	message.EncodeRecord(record, size, m, 0, 0, 0)
	for _, c := range []struct{ name, expr, exprType string }{
		{"tag", "TagA || TagB", protocol.ExpressionTag},
		{"sql92", "p3 > 10 AND region IN ('eu-west', 'eu-north') AND TAGS = 'TagA'", protocol.ExpressionSQL92},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := Parse("T", c.expr, c.exprType).Filter()
			code := message.TagsHashCode("TagA")
			b.ReportAllocs()
			for b.Loop() {
				if !f.IsMatchedByConsumeQueue(code) || !f.IsMatchedByCommitLog(record) {
					b.Fatal("no match")
				}
			}
		})
	}
}

var testBornHost = netip.MustParseAddrPort("127.0.0.1:40000")
