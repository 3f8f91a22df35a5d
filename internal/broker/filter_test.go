package broker

import (
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
			BornHost: consumeTestBornHost, StoreHost: consumeTestBornHost}
		size, err := message.RecordSize(m)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, size)
		message.EncodeRecord(buf, size, m, 0, 0, 0)
		return buf
	}
	matches := func(s *subscription, tags string) bool {
		f := s.filter()
		if f == nil {
			return true
		}
		return f.IsMatchedByConsumeQueue(message.TagsHashCode(tags)) && f.IsMatchedByCommitLog(record(tags))
	}
	cases := []struct {
		name string
		sub  *subscription
		yes  []string
		no   []string
	}{
		{"star", newSubscription(protocol.SubscriptionData{SubString: "*"}), []string{"a", ""}, nil},
		{"empty", parseSubscription("T", "", ""), []string{"a", ""}, nil},
		{"tags", parseSubscription("T", " a || b ||", "TAG"), []string{"a", "b"}, []string{"c", "", "a||b"}},
		{"non-ASCII, Go client codes", newSubscription(protocol.SubscriptionData{SubString: "é", TagsSet: []string{"é"},
			CodeSet: protocol.TagCodes{6214}}), []string{"é"}, []string{"e"}},
		{"collision", parseSubscription("T", "Aa", ""), []string{"Aa"}, []string{"BB"}},
		{"Java codes only", newSubscription(protocol.SubscriptionData{SubString: "x",
			CodeSet: protocol.TagCodes{int32(message.TagsHashCode("x"))}}), []string{"x"}, []string{"y"}},
		{"subString only", newSubscription(protocol.SubscriptionData{SubString: "x || y"}), []string{"x", "y"}, []string{"z"}},
		// TAGS is a property like any other to SQL92.
		{"SQL92", parseSubscription("T", "TAGS IN ('a', 'b') OR TAGS IS NULL", "SQL92"), []string{"a", "b", ""}, []string{"c"}},
		{"class filter", newSubscription(protocol.SubscriptionData{SubString: "a", ClassFilterMode: true}), []string{"b"}, nil},
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
