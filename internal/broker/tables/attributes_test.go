package tables

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/route"
)

func TestParseAttributes(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{"", map[string]string{}, ""},
		{"+message.type=FIFO", map[string]string{"+message.type": "FIFO"}, ""},
		{"+message.type=FIFO,-queue.type", map[string]string{"+message.type": "FIFO", "-queue.type": ""}, ""},
		{"message.type=FIFO", nil, "add/alter attribute format is wrong: message.type"},
		{"message.type", nil, "delete attribute format is wrong: message.type"},
		{"+message.type=", nil, "add/alter attribute format is wrong"},
		{"+message.type=A=B", nil, "add/alter attribute format is wrong"},
		{"+a=1,+a=2", nil, "key duplication: +a"},
		{",", nil, "delete attribute format is wrong"},
		{"+" + strings.Repeat("k", 1<<16) + "=v,x", nil, "delete attribute format is wrong: x"},
	} {
		got, err := ParseAttributes(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ParseAttributes(%.40q) = %v, %v; want error %q", c.in, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || !cmp.Equal(c.want, got) {
			t.Errorf("ParseAttributes(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	// A remark repeats at most a bounded part of what a client sent.
	_, err := ParseAttributes(strings.Repeat("k", 1<<16) + "=v")
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("remark of a huge key: %d bytes", len(err.Error()))
	}
}

func TestAlterAttributes(t *testing.T) {
	fifo := map[string]string{AttrMessageType: TypeFIFO}
	for _, c := range []struct {
		name    string
		create  bool
		current map[string]string
		mods    string
		want    map[string]string
		wantErr string
	}{
		{"create typed", true, nil, "+message.type=FIFO", fifo, ""},
		{"create with fixed keys", true, nil, "+queue.type=SimpleCQ,+cleanup.policy=DELETE",
			map[string]string{AttrQueueType: "SimpleCQ", AttrCleanupPolicy: "DELETE"}, ""},
		{"create untyped", true, nil, "", nil, ""},
		{"create deletes", true, nil, "-message.type", nil, "only add attribute is supported while creating topic"},
		{"unknown key", true, nil, "+color=red", nil, "unsupported key: color"},
		{"reserve.time", true, nil, "+reserve.time=10", nil, "unsupported key: reserve.time"},
		{"unknown value", true, nil, "+message.type=FAST", nil, "value is not in set"},
		{"batch cq", true, nil, "+queue.type=BatchCQ", nil, "value is not in set: [SimpleCQ]"},
		{"change type", false, fifo, "+message.type=DELAY", map[string]string{AttrMessageType: TypeDelay}, ""},
		{"keep type", false, fifo, "", fifo, ""},
		{"delete type", false, fifo, "-message.type", nil, ""},
		{"delete absent", false, nil, "-message.type", nil, "attempt to delete a nonexistent key: message.type"},
		{"fixed after create", false, fifo, "+queue.type=SimpleCQ", nil,
			"attempt to update an unchangeable attribute. key: queue.type"},
		{"same key twice", false, fifo, "+message.type=NORMAL,-message.type", nil, "alter duplication key"},
		{"signs inside", false, fifo, "+message+type=NORMAL", nil, "kv string format wrong."},
	} {
		t.Run(c.name, func(t *testing.T) {
			mods, err := ParseAttributes(c.mods)
			if err != nil {
				t.Fatal(err)
			}
			before := cloneMap(c.current)
			got, err := AlterAttributes(c.create, c.current, mods)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, %v; want error %q", got, err, c.wantErr)
				}
			} else if err != nil || !cmp.Equal(c.want, got) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
			if !cmp.Equal(before, c.current) {
				t.Errorf("current attributes changed in place: %v, was %v", c.current, before)
			}
		})
	}
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestScrubAttributes(t *testing.T) {
	table := map[string]route.TopicConfig{
		"ok":    {TopicName: "ok", Attributes: map[string]string{AttrMessageType: TypeFIFO}},
		"bad":   {TopicName: "bad", Attributes: map[string]string{AttrMessageType: "FAST", AttrQueueType: "SimpleCQ"}},
		"alien": {TopicName: "alien", Attributes: map[string]string{"color": "red"}},
		"plain": {TopicName: "plain"},
	}
	if n := scrubTable(table); n != 2 {
		t.Errorf("scrubbed %d topics, want 2", n)
	}
	want := map[string]map[string]string{"ok": {AttrMessageType: TypeFIFO}, "bad": {AttrQueueType: "SimpleCQ"},
		"alien": nil, "plain": nil}
	for name, w := range want {
		if got := table[name].Attributes; !cmp.Equal(w, got) {
			t.Errorf("%s: %v, want %v", name, got, w)
		}
	}
	if typ, set := MessageType(table["ok"]); typ != TypeFIFO || !set {
		t.Errorf("MessageType(ok) = %s %t", typ, set)
	}
	if typ, set := MessageType(table["plain"]); typ != TypeNormal || set {
		t.Errorf("MessageType(plain) = %s %t", typ, set)
	}
}

// A slave takes its master's attributes; what no request could set is left out, on a slave
// and in a file loaded from disk.
func TestAttributesSlaveSyncAndLoad(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	tb := load(t, cfg)
	w := route.TopicConfigSerializeWrapper{DataVersion: route.DataVersion{Timestamp: 1, Counter: 9},
		TopicConfigTable: map[string]route.TopicConfig{
			"F": {TopicName: "F", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, Attributes: map[string]string{AttrMessageType: TypeFIFO}},
			"X": {TopicName: "X", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, Attributes: map[string]string{AttrMessageType: "BOGUS"}},
		}}
	if err := tb.Topics.InstallMaster(w); err != nil {
		t.Fatal(err)
	}
	if tc, _ := tb.Topics.Get("F"); tc.Attributes[AttrMessageType] != TypeFIFO {
		t.Errorf("F on the slave: %+v", tc)
	}
	if tc, ok := tb.Topics.Get("X"); !ok || tc.Attributes != nil {
		t.Errorf("X on the slave: %+v %v", tc, ok)
	}
	if err := tb.Topics.UpdateAttributes(route.TopicConfig{TopicName: "G", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6},
		map[string]string{"+" + AttrMessageType: TypeDelay}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Writer.FlushAll(); err != nil {
		t.Fatal(err)
	}
	tb2 := load(t, cfg)
	for topic, want := range map[string]string{"F": TypeFIFO, "G": TypeDelay} {
		if tc, _ := tb2.Topics.Get(topic); tc.Attributes[AttrMessageType] != want {
			t.Errorf("%s after reload: %+v, want %s", topic, tc, want)
		}
	}
}

// TestMessageTypeOf: a send's properties make its type as RocketMQ 5 parses them, a half
// message first, then any delay, then a message group.
func TestMessageTypeOf(t *testing.T) {
	props := func(kv ...string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return message.MarshalProperties(m)
	}
	for _, c := range []struct{ props, want string }{
		{"", TypeNormal},
		{props("TAGS", "a"), TypeNormal},
		{props("TRAN_MSG", "true", "DELAY", "3"), TypeTransaction},
		{props("TRAN_MSG", "false"), TypeNormal},
		{props("DELAY", "3", "__SHARDINGKEY", "g"), TypeDelay},
		{props("TIMER_DELIVER_MS", "1"), TypeDelay},
		{props("TIMER_DELAY_SEC", "1"), TypeDelay},
		{props("TIMER_DELAY_MS", "1"), TypeDelay},
		{props("__SHARDINGKEY", "g"), TypeFIFO},
	} {
		if got := MessageTypeOf(c.props); got != c.want {
			t.Errorf("MessageTypeOf(%q) = %s, want %s", c.props, got, c.want)
		}
	}
}
