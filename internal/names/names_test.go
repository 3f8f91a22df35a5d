package names

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name  string
		check func(string) error
		in    string
		rule  Rule // 0: valid
		at    int
	}{
		{"topic plain", CheckTopic, "TopicTest", 0, 0},
		{"topic charset", CheckTopic, "%RETRY%a|b_c-D9", 0, 0},
		{"topic 127 bytes", CheckTopic, strings.Repeat("t", 127), 0, 0},
		{"topic 128 bytes", CheckTopic, strings.Repeat("t", 128), TooLong, 0},
		{"topic empty", CheckTopic, "", Empty, 0},
		{"topic blank", CheckTopic, " ", IllegalChar, 0},
		{"topic slash", CheckTopic, "a/b", IllegalChar, 1},
		{"topic dotdot", CheckTopic, "..", IllegalChar, 0},
		{"topic backslash", CheckTopic, `a\b`, IllegalChar, 1},
		{"topic NUL", CheckTopic, "a\x00", IllegalChar, 1},
		{"topic at sign", CheckTopic, "t@g", IllegalChar, 1},
		{"topic invalid utf8", CheckTopic, "ok\xff\xfe", IllegalChar, 2},
		{"topic non-ascii utf8", CheckTopic, "tópico", IllegalChar, 1},
		{"group 255 bytes", CheckGroup, strings.Repeat("g", 255), 0, 0},
		{"group 256 bytes", CheckGroup, strings.Repeat("g", 256), TooLong, 0},
		{"group traversal", CheckGroup, "../../../../x/pwn", IllegalChar, 0},
		{"group empty", CheckGroup, "", Empty, 0},
		{"retry group 120 bytes", CheckRetryGroup, strings.Repeat("g", 120), 0, 0},
		{"retry group 121 bytes", CheckRetryGroup, strings.Repeat("g", 121), RetryTooLong, 0},
		{"retry group 256 bytes", CheckRetryGroup, strings.Repeat("g", 256), TooLong, 0},
		{"retry group traversal", CheckRetryGroup, "../x", IllegalChar, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.check(c.in)
			if c.rule == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want an *Error wrapping ErrInvalid", err)
			}
			if e.Rule != c.rule || e.At != c.at || e.Len != len(c.in) {
				t.Fatalf("rule %d at %d len %d, want rule %d at %d len %d (%v)", e.Rule, e.At, e.Len, c.rule, c.at, len(c.in), err)
			}
			msg := err.Error()
			if !utf8.ValidString(msg) {
				t.Errorf("message is not valid UTF-8: %q", msg)
			}
			if c.rule == IllegalChar && !strings.Contains(msg, Pattern) {
				t.Errorf("message %q does not name the pattern", msg)
			}
		})
	}
	if got := RetryPrefix + strings.Repeat("g", MaxRetryGroupBytes); CheckTopic(got) != nil {
		t.Errorf("retry topic of the longest retry group is not a valid topic")
	}
}

// TestErrorQuotesBoundedPrefix: a huge name must not become a huge remark, and the bytes
// quoted must be escaped, not copied.
func TestErrorQuotesBoundedPrefix(t *testing.T) {
	huge := strings.Repeat("\xff", 1<<20)
	err := CheckGroup(huge)
	msg := err.Error()
	if len(msg) > 512 {
		t.Fatalf("message of %d bytes for a 1 MiB name", len(msg))
	}
	if !utf8.ValidString(msg) || !strings.Contains(msg, `\xff`) || !strings.Contains(msg, "1048576 bytes") {
		t.Fatalf("message %q", msg)
	}
	bad := strings.Repeat("a", 200) + "/"
	msg = CheckGroup(bad).Error()
	if !strings.Contains(msg, "at byte 200") || len(msg) > 512 {
		t.Fatalf("message %q", msg)
	}
	msg = CheckTopic("a\"b").Error()
	if !strings.Contains(msg, `"a\"b"`) {
		t.Fatalf("quote not escaped: %q", msg)
	}
}

func TestValidNamesDoNotAllocate(t *testing.T) {
	topic, group := strings.Repeat("T", 127), strings.Repeat("g", 120)
	n := testing.AllocsPerRun(100, func() {
		if CheckTopic(topic) != nil || CheckGroup(group) != nil || CheckRetryGroup(group) != nil {
			t.Fatal("refused")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per check of valid names", n)
	}
}

func BenchmarkCheckTopic(b *testing.B) {
	topic := "BenchmarkTopic_with-some|length%01"
	b.ReportAllocs()
	for b.Loop() {
		if CheckTopic(topic) != nil {
			b.Fatal("refused")
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "T", "../x", "a@b", "\xff", strings.Repeat("g", 121)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, check := range []func(string) error{CheckTopic, CheckGroup, CheckRetryGroup} {
			err := check(s)
			if err == nil {
				if strings.ContainsAny(s, "/\\.@\x00") || !utf8.ValidString(s) || s == "" {
					t.Fatalf("accepted %q", s)
				}
				continue
			}
			if msg := err.Error(); !utf8.ValidString(msg) || len(msg) > 512 {
				t.Fatalf("message %q for %q", msg, s)
			}
		}
	})
}
