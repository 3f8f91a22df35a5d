package names

import "testing"

// The cases of RocketMQ's NamespaceUtil: a plain name, retry and dead-letter topics keep their
// prefix in front, system names and names already wrapped stay, no namespace changes nothing.
func TestWrapNamespace(t *testing.T) {
	cases := []struct{ ns, name, wire string }{
		{"ns", "T", "ns%T"},
		{"ns", "%RETRY%g", "%RETRY%ns%g"},
		{"ns", "%DLQ%g", "%DLQ%ns%g"},
		{"ns", "ns%T", "ns%T"},
		{"ns", "%RETRY%ns%g", "%RETRY%ns%g"},
		{"ns", "nsT", "ns%nsT"},
		{"ns", "other%T", "ns%other%T"},
		{"ns", "TBW102", "TBW102"},
		{"ns", "SCHEDULE_TOPIC_XXXX", "SCHEDULE_TOPIC_XXXX"},
		{"ns", "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRACE_TOPIC"},
		{"ns", "BenchmarkTest", "BenchmarkTest"},
		{"ns", "CID_RMQ_SYS_x", "CID_RMQ_SYS_x"},
		{"", "T", "T"},
		{"ns", "", ""},
	}
	for _, c := range cases {
		if got := WrapNamespace(c.ns, c.name); got != c.wire {
			t.Errorf("WrapNamespace(%q, %q) = %q, want %q", c.ns, c.name, got, c.wire)
		}
		if got := WrapNamespace(c.ns, c.wire); got != c.wire {
			t.Errorf("WrapNamespace(%q, %q) wrapped twice: %q", c.ns, c.wire, got)
		}
		if c.name == c.wire || HasNamespace(c.ns, c.name) {
			continue
		}
		if got := WithoutNamespace(c.ns, c.wire); got != c.name {
			t.Errorf("WithoutNamespace(%q, %q) = %q, want %q", c.ns, c.wire, got, c.name)
		}
	}
	for _, c := range []struct{ ns, name string }{
		{"ns", "T"}, {"ns", "other%T"}, {"ns", "nsx%T"}, {"", "ns%T"}, {"ns", "TBW102"},
	} {
		if got := WithoutNamespace(c.ns, c.name); got != c.name {
			t.Errorf("WithoutNamespace(%q, %q) = %q, want it unchanged", c.ns, c.name, got)
		}
	}
}
