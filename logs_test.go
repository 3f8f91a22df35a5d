package mq_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// lockedBuffer collects log lines from every goroutine of a node and its clients.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// objectKeys returns the keys of the JSON object line in order, failing on a line that is not
// one; strict ingesters refuse an object that repeats a key, which encoding/json accepts.
func objectKeys(line string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// Every line a node and its clients log is a JSON object without a repeated key: a sub-part
// (the broker's and the client's reset-offset handling) names itself with "service" beside its
// component's name, and a refused request is logged with its code's name beside the number.
func TestLogLinesHaveUniqueKeys(t *testing.T) {
	var out lockedBuffer
	l := zerolog.New(&out).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	n, err := mq.StartNode(mq.Options{
		Listen:   "127.0.0.1:0",
		Logger:   &l,
		Store:    config.Store{Dir: t.TempDir(), SegmentBytes: 8 << 20},
		HA:       config.HA{Listen: "127.0.0.1:0"},
		Security: config.Security{ClusterSecret: "log-test-cluster-secret"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })

	topic, group := "LogKeys", "log-keys-cg"
	createTopicAndWait(t, n, topic)
	start := time.Now().UnixMilli()
	for time.Now().UnixMilli() <= start {
		time.Sleep(time.Millisecond)
	}
	p, err := n.NewProducer()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.SendSync(context.Background(), producer.NewMessage(topic, []byte("k-0"))); err != nil {
		t.Fatal(err)
	}
	c, err := n.NewPushConsumer(consumer.WithGroup(group), consumer.WithPersistInterval(50*time.Millisecond),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}), consumer.WithRebalanceInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 16)
	if err := c.Subscribe(topic, "*", func(context.Context, []*consumer.Message) (consumer.ConsumeResult, error) {
		got <- struct{}{}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("message not consumed")
	}
	reset := remoting.NewRequest(remoting.InvokeBrokerToResetOffset, remoting.EncodeHeader(
		&protocol.ResetOffsetRequestHeader{Topic: topic, Group: group, Timestamp: start}), nil)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp := adminRequest(t, n, nil, remoting.Credentials{}, reset); resp.Code == remoting.Success {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reset offset refused until the deadline")
		}
		reset.Opaque = remoting.NextOpaque()
	}
	// A registration without the cluster's proof is refused and logged.
	reg := remoting.NewRequest(remoting.RegisterBroker, map[string]string{"brokerName": "intruder"}, nil)
	if resp := adminRequest(t, n, nil, remoting.Credentials{}, reg); resp.Code == remoting.Success {
		t.Fatal("a registration without the cluster secret's proof succeeded")
	}

	want := map[string]bool{
		`"component":"admin"` + "|" + `"service":"reset-offset"`:  false, // the broker's side
		`"component":"client"` + "|" + `"service":"reset-offset"`: false, // the consumer's side
		`"code":103` + "|" + `"request":"REGISTER_BROKER"`:        false,
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines := out.lines()
		for _, line := range lines {
			keys, err := objectKeys(line)
			if err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			seen := map[string]bool{}
			for _, k := range keys {
				if seen[k] {
					t.Fatalf("log line repeats key %q: %s", k, line)
				}
				seen[k] = true
			}
			for w := range want {
				a, b, _ := strings.Cut(w, "|")
				if strings.Contains(line, a) && strings.Contains(line, b) {
					want[w] = true
				}
			}
		}
		missing := ""
		for w, ok := range want {
			if !ok {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %s among %d lines", missing, len(lines))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
