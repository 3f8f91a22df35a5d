package remoting

import "testing"

// interned finds exactly the strings of internedStrings: each of them, sharing the table's
// copy, and no other piece, whatever its length or first byte.
func TestInternedMatchesTheTable(t *testing.T) {
	for s := range internedStrings {
		got, ok := interned([]byte(s))
		if !ok || got != s {
			t.Errorf("interned(%q) = %q, %v", s, got, ok)
		}
	}
	for _, s := range []string{"2", "z", "\x00", "\xff", "co", "codex", "cod", "topics", "Topic", "TBW103",
		"suggestWhichBrokerIdX", "serializeTypeCurrentRPC_", "falsE", "20001", "MSG_REGIO"} {
		if _, in := internedStrings[s]; in {
			continue
		}
		if got, ok := interned([]byte(s)); ok {
			t.Errorf("interned(%q) = %q, true for a string not in the table", s, got)
		}
	}
}
