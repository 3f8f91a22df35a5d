package broker

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
)

// FuzzSetProperty checks the properties editing the send path does on strings from the network
// against the client's parser: setting a key gives the parsed map with that key replaced,
// removing it gives the map without it, whatever the input (malformed pieces, missing final
// separator, duplicate keys).
func FuzzSetProperty(f *testing.F) {
	for _, s := range []string{"", "A\x011\x02", "A\x011", "CLUSTER\x01x\x02", "K\x01a\x02K\x01b\x02",
		"\x02\x02", "K\x01v\x01w\x02K", "KK\x011\x02K", "DELAY\x013\x02TAGS\x01a\x02"} {
		f.Add(s, "CLUSTER", "DefaultCluster")
		f.Add(s, "K", "")
	}
	f.Fuzz(func(t *testing.T, props, key, value string) {
		if key == "" || strings.ContainsAny(key+value, "\x01\x02") {
			t.Skip() // names and values cannot hold the separators (docs/protocol.md §9.3)
		}
		want := message.UnmarshalProperties([]byte(props))
		want[key] = value
		got := setProperty(props, key, value)
		if diff := cmp.Diff(want, message.UnmarshalProperties([]byte(got))); diff != "" {
			t.Fatalf("setProperty(%q, %q, %q) = %q (-want +got):\n%s", props, key, value, got, diff)
		}
		if v, ok := message.PropertyValueString(got, key); !ok || v != value {
			t.Fatalf("PropertyValueString after set = %q, %t", v, ok)
		}
		delete(want, key)
		removed := removeProperty(got, key)
		if diff := cmp.Diff(want, message.UnmarshalProperties([]byte(removed))); diff != "" {
			t.Fatalf("removeProperty(%q, %q) = %q (-want +got):\n%s", got, key, removed, diff)
		}
		// Joining a batch element's properties with the wrapper's keeps both (wrapper wins).
		elem := message.UnmarshalProperties([]byte(props))
		joined := message.UnmarshalProperties([]byte(joinProperties([]byte(props), key+"\x01"+value+"\x02")))
		maps.Copy(elem, map[string]string{key: value})
		if diff := cmp.Diff(elem, joined); diff != "" {
			t.Fatalf("joinProperties(%q) (-want +got):\n%s", props, diff)
		}
	})
}
