package producer

import (
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/message"
)

// encodeProperties writes a generated UNIQ_KEY where appendProperties would and returns it as
// the message id; a UNIQ_KEY the user set, even empty, is left as it is.
func TestEncodePropertiesWritesTheIdItReturns(t *testing.T) {
	big := strings.Repeat("v", sharedMsgIDMaxProperties)
	for _, c := range []struct {
		name string
		msg  *Message
		gen  bool // the id is generated and written into the properties
	}{
		{"generated", NewMessage("T", nil).WithTags("tagA").WithKeys("k1"), true},
		{"generated, long properties", NewMessage("T", nil).WithProperty("big", big), true},
		{"user set", NewMessage("T", nil).WithTags("tagA").WithProperty(message.PropertyUniqKey, "ID1"), false},
		{"user set empty", NewMessage("T", nil).WithProperty(message.PropertyUniqKey, ""), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, props := encodeProperties(c.msg)
			var want strings.Builder
			uniq := ""
			if c.gen {
				uniq = id
			}
			c.msg.appendProperties(&want, uniq)
			if props != want.String() {
				t.Fatalf("properties %q, want %q", props, want.String())
			}
			if !uniqRE.MatchString(id) && id != c.msg.uniqKeyOf() {
				t.Fatalf("id %q", id)
			}
			if v, _ := message.PropertyValueString(props, message.PropertyUniqKey); c.gen && v != id {
				t.Fatalf("UNIQ_KEY %q, id %q", v, id)
			}
		})
	}
}
