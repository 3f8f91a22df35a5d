package message

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzSetProperty checks the properties editing the broker's send path does on strings from the network
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
		want := UnmarshalProperties([]byte(props))
		want[key] = value
		got := SetProperty(props, key, value)
		if diff := cmp.Diff(want, UnmarshalProperties([]byte(got))); diff != "" {
			t.Fatalf("SetProperty(%q, %q, %q) = %q (-want +got):\n%s", props, key, value, got, diff)
		}
		if v, ok := PropertyValueString(got, key); !ok || v != value {
			t.Fatalf("PropertyValueString after set = %q, %t", v, ok)
		}
		delete(want, key)
		removed := RemoveProperty(got, key)
		if diff := cmp.Diff(want, UnmarshalProperties([]byte(removed))); diff != "" {
			t.Fatalf("RemoveProperty(%q, %q) = %q (-want +got):\n%s", got, key, removed, diff)
		}
		// Joining a batch element's properties with the wrapper's keeps both (wrapper wins).
		elem := UnmarshalProperties([]byte(props))
		joined := UnmarshalProperties([]byte(JoinProperties([]byte(props), key+"\x01"+value+"\x02")))
		maps.Copy(elem, map[string]string{key: value})
		if diff := cmp.Diff(elem, joined); diff != "" {
			t.Fatalf("JoinProperties(%q) (-want +got):\n%s", props, diff)
		}
	})
}

func TestSetProperty(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "K\x01v\x02"},
		{"A\x011\x02", "A\x011\x02K\x01v\x02"},
		{"A\x011", "A\x011\x02K\x01v\x02"},
		{"K\x01v\x02A\x011\x02", "K\x01v\x02A\x011\x02"},
		{"K\x01old\x02A\x011\x02K\x01x\x02", "A\x011\x02K\x01v\x02"},
		{"KK\x011\x02", "KK\x011\x02K\x01v\x02"},
	}
	for _, c := range cases {
		if got := SetProperty(c.in, "K", "v"); got != c.want {
			t.Errorf("SetProperty(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := RemoveProperty("A\x011\x02DELAY\x013\x02B\x012", "DELAY"); got != "A\x011\x02B\x012" {
		t.Errorf("removeProperty = %q", got)
	}
	if got := JoinProperties([]byte("A\x011"), "C\x01c\x02"); got != "A\x011\x02C\x01c\x02" {
		t.Errorf("joinProperties = %q", got)
	}
}

func TestDelayLevel(t *testing.T) {
	for props, want := range map[string]int{"": 0, "DELAY\x013\x02": 3, "A\x01b\x02DELAY\x0118": 18,
		"DELAY\x01x\x02": 0, "DELAY\x01-2\x02": 0, "XDELAY\x015\x02": 0} {
		if got := DelayLevel(props); got != want {
			t.Errorf("DelayLevel(%q) = %d, want %d", props, got, want)
		}
	}
}
