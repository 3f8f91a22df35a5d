package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/trace"
	"github.com/mqgo/mq/producer"
)

// The message commands beside queryMsgById and consumeMessage: look-ups by unique key and of a
// message's trace, printing a topic or a queue, and send-time probes (RocketMQ 4.9's
// queryMsgByUniqueKey, queryMsgTraceById, printMsg, printMsgByQueue, sendMsgStatus,
// checkMsgSendRT, clusterRT).

// Defaults of the probes, RocketMQ's.
const (
	defaultStatusMsgSize  = 128 // sendMsgStatus -s
	defaultStatusMsgCount = 50  // sendMsgStatus -c
	defaultRTAmount       = 100 // checkMsgSendRT and clusterRT -a
	defaultRTMsgSize      = 128 // checkMsgSendRT and clusterRT -s
	defaultRTInterval     = 10  // clusterRT -i, seconds
	// statusProducerGroup is sendMsgStatus's producer group (RocketMQ's "PID_SMSC").
	statusProducerGroup = "PID_SMSC"
	// maxProbeMessages and maxProbeBytes bound what one probe sends: they are the operator's
	// numbers, but a typo must not fill a broker.
	maxProbeMessages = 1_000_000
	maxProbeBytes    = 4 << 20
	// pullBatch is how many messages printMsg asks a queue for at once, RocketMQ's 32.
	pullBatch = 32
)

func init() {
	commands = append(commands,
		command{name: "queryMsgByUniqueKey", desc: "Query Message by Unique key", exec: queryMsgByUniqueKey,
			options: []option{{short: "i", long: "msgId", usage: "Message Id", required: true},
				{short: "g", long: "consumerGroup", usage: "consumer group name"},
				{short: "d", long: "clientId", usage: "The consumer's client id"},
				{short: "t", long: "topic", usage: "The topic of msg", required: true},
				{short: "a", long: "showAll", usage: "Print all message, the limit is 32", boolean: true}},
			check: func(e *env) error {
				if e.has("g") != e.has("d") {
					return usageErrorf("-g and -d go together")
				}
				return nil
			}},
		command{name: "queryMsgTraceById", desc: "query a message trace", exec: queryMsgTraceByID,
			options: []option{{short: "i", long: "msgId", usage: "Message Id", required: true},
				{short: "t", long: "traceTopic", usage: "The name value of message trace topic"}}},
		command{name: "printMsg", desc: "Print Message Detail", exec: printMsg,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "c", long: "charsetName", usage: "CharsetName (UTF-8 only)"},
				{short: "s", long: "subExpression", usage: "Subscribe Expression(eg: TagA || TagB)"},
				{short: "b", long: "beginTimestamp", usage: "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
				{short: "e", long: "endTimestamp", usage: "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
				{short: "d", long: "printBody", usage: "print body (default true)"}}},
		command{name: "printMsgByQueue", desc: "Print Message Detail", exec: printMsgByQueue,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "a", long: "brokerName", usage: "broker name", required: true},
				{short: "i", long: "queueId", usage: "queue id", required: true},
				{short: "c", long: "charsetName", usage: "CharsetName (UTF-8 only)"},
				{short: "s", long: "subExpression", usage: "Subscribe Expression(eg: TagA || TagB)"},
				{short: "b", long: "beginTimestamp", usage: "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
				{short: "e", long: "endTimestamp", usage: "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"},
				{short: "p", long: "printMsg", usage: "print msg. eg: true | false(default)"},
				{short: "d", long: "printBody", usage: "print body. eg: true | false(default)"},
				{short: "f", long: "calculate", usage: "calculate by tag. eg: true | false(default)"}}},
		command{name: "sendMsgStatus", desc: "send msg to broker.", exec: sendMsgStatus,
			options: []option{{short: "b", long: "brokerName", usage: "Broker Name", required: true},
				{short: "s", long: "messageSize", usage: "Message Size, Default: 128"},
				{short: "c", long: "count", usage: "send message count, Default: 50"}}},
		command{name: "checkMsgSendRT", desc: "check message send response time", exec: checkMsgSendRT,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "a", long: "amount", usage: "message amount | default 100"},
				{short: "s", long: "size", usage: "message size | default 128 Byte"}}},
		command{name: "clusterRT", desc: "List All clusters Message Send RT", exec: clusterRT,
			options: []option{{short: "a", long: "amount", usage: "message amount | default 100"},
				{short: "s", long: "size", usage: "message size | default 128 Byte"},
				{short: "c", long: "cluster", usage: "cluster name | default display all cluster"},
				{short: "p", long: "printLog", usage: "print as tlog | default false"},
				{short: "m", long: "machineRoom", usage: "machine room name | default noname"},
				{short: "i", long: "interval", usage: "print interval | default 10 seconds"}}},
	)
}

func queryMsgByUniqueKey(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	topic, id := e.str("t"), e.str("i")
	msgs, err := a.QueryMessagesByUniqueKey(ctx, topic, id)
	if err != nil {
		return nil, nil, err
	}
	if e.has("g") {
		// The broker relays a consume request by offset id: the stored copy's.
		return consumeDirectly(ctx, a, e.str("g"), e.str("d"), []string{msgs[0].OffsetMsgID})
	}
	if !e.has("a") {
		msgs = msgs[:1]
	}
	tracks := messageTracks(ctx, e, a, msgs)
	return messagesJSON(msgs), text(func(b *strings.Builder) {
		for i, m := range msgs {
			if i > 0 {
				b.WriteByte('\n')
			}
			printMessage(b, m, false)
			printTracks(b, tracks[i])
		}
	}), nil
}

// messageTracks tells for each message which groups consumed it; a look-up that fails is
// reported on stderr, as RocketMQ prints its stack, and leaves that message's tracks nil.
func messageTracks(ctx context.Context, e *env, a *admin.Admin, msgs []*consumer.Message) [][]admin.MessageTrack {
	out := make([][]admin.MessageTrack, len(msgs))
	for i, m := range msgs {
		t, err := a.MessageTrackDetail(ctx, m)
		if err != nil {
			fmt.Fprintf(e.stderr, "mqadmin %s: message track of %s: %v\n", e.cmd.name, m.MsgID, err)
			continue
		}
		out[i] = t
	}
	return out
}

// printTracks writes the tracks under a message, as RocketMQ's queryMsgById does (a line
// each, where Java runs them together).
func printTracks(b *strings.Builder, tracks []admin.MessageTrack) {
	if tracks == nil {
		return
	}
	if len(tracks) == 0 {
		b.WriteString("\n\nWARN: No Consumer\n")
		return
	}
	b.WriteString("\n\n")
	for _, t := range tracks {
		b.WriteString(t.String() + "\n")
	}
}

type traceRow struct {
	Type       string `json:"type"`
	Group      string `json:"group"`
	ClientHost string `json:"clientHost"`
	Time       int64  `json:"timestamp"`
	CostTime   int64  `json:"costTime"`
	Status     string `json:"status"`
}

// maxTraceMessages is how many trace messages RocketMQ's queryMsgTraceById asks each broker for.
const maxTraceMessages = 64

// queryMsgTraceByID is RocketMQ's queryMsgTraceById: the trace records of a message id in the
// trace topic (keyed by the traced ids), its send and each consumer group's consumptions.
func queryMsgTraceByID(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	topic, id := e.str("t"), e.str("i")
	if topic == "" {
		topic = trace.DefaultTopic
	}
	msgs, err := a.QueryMessageByKey(ctx, topic, id, maxTraceMessages, time.Time{}, time.Now())
	if err != nil {
		return nil, nil, err
	}
	var pubs []traceRow
	subs := map[string][]traceRow{}
	for _, m := range msgs {
		records, err := trace.Decode(string(m.Body))
		if err != nil {
			// As RocketMQ's decoder, what decoded before a bad record counts.
			fmt.Fprintf(e.stderr, "mqadmin queryMsgTraceById: trace message %s: %v\n", m.MsgID, err)
		}
		for _, r := range records {
			if len(r.Beans) == 0 || r.Beans[0].MsgID != id {
				continue
			}
			row := traceRow{Type: string(r.Type), Group: r.Group, ClientHost: m.BornHost.Addr().String(), Time: r.TimeStamp,
				CostTime: r.CostTime, Status: "failed"}
			if r.Success {
				row.Status = "success"
			}
			switch r.Type {
			case trace.Pub:
				pubs = append(pubs, row)
			case trace.SubAfter:
				subs[r.Group] = append(subs[r.Group], row)
			}
		}
	}
	all := slices.Clone(pubs)
	for _, g := range slices.Sorted(maps.Keys(subs)) {
		all = append(all, subs[g]...)
	}
	const format = "%-10s %-20s %-20s %-20s %-10s %-10s\n"
	return all, text(func(b *strings.Builder) {
		for _, r := range pubs {
			fmt.Fprintf(b, format, "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status")
			fmt.Fprintf(b, format, "Pub", r.Group, r.ClientHost, traceTime(r.Time), strconv.FormatInt(r.CostTime, 10)+"ms", r.Status)
			b.WriteString("\n")
		}
		for _, g := range slices.Sorted(maps.Keys(subs)) {
			fmt.Fprintf(b, format, "#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")
			for _, r := range subs[g] {
				fmt.Fprintf(b, format, "Sub", r.Group, r.ClientHost, traceTime(r.Time), strconv.FormatInt(r.CostTime, 10)+"ms", r.Status)
			}
			b.WriteString("\n")
		}
	}), nil
}

func traceTime(ms int64) string { return time.UnixMilli(ms).Local().Format(time.DateTime) }

// msgFilter is printMsg's and printMsgByQueue's reading of -c, -s, -b and -e.
type msgFilter struct {
	expression string
	begin, end *time.Time
}

func readMsgFilter(e *env) (msgFilter, error) {
	f := msgFilter{expression: "*"}
	if c := e.str("c"); c != "" && !strings.EqualFold(c, "UTF-8") && !strings.EqualFold(c, "UTF8") {
		return f, usageErrorf("-c: charset %q: only UTF-8 is supported", c)
	}
	if s := e.str("s"); s != "" {
		f.expression = s
	}
	for _, o := range []struct {
		flag string
		dst  **time.Time
	}{{"b", &f.begin}, {"e", &f.end}} {
		if s := e.str(o.flag); s != "" {
			t, _, err := parseTimestamp(s)
			if err != nil {
				return f, usageErrorf("-%s: %q is not milliseconds or yyyy-MM-dd#HH:mm:ss:SSS", o.flag, s)
			}
			if t.IsZero() { // "now"
				t = time.Now()
			}
			*o.dst = &t
		}
	}
	return f, nil
}

// queueRange is the offsets [min, max) of mq to print: the queue's, or those -b and -e find.
func (f msgFilter) queueRange(ctx context.Context, a *admin.Admin, mq admin.MessageQueue, o admin.TopicOffset) (int64, int64, error) {
	lo, hi := o.MinOffset, o.MaxOffset
	var err error
	if f.begin != nil {
		if lo, err = a.SearchOffset(ctx, mq, *f.begin); err != nil {
			return 0, 0, err
		}
	}
	if f.end != nil {
		if hi, err = a.SearchOffset(ctx, mq, *f.end); err != nil {
			return 0, 0, err
		}
	}
	return lo, hi, nil
}

type printedQueue struct {
	Queue     admin.MessageQueue `json:"queue"`
	MinOffset int64              `json:"minOffset"`
	MaxOffset int64              `json:"maxOffset"`
	Messages  []messageJSON      `json:"messages"`
}

// printMsg is RocketMQ's printMsg: every queue of the topic from its first offset (or -b's)
// to its last (or -e's). In text mode the messages are printed as they are pulled, not held.
func printMsg(ctx context.Context, e *env) (any, func(io.Writer), error) {
	f, err := readMsgFilter(e)
	if err != nil {
		return nil, nil, err
	}
	printBody, err := e.bool("d", true)
	if err != nil {
		return nil, nil, err
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	topic := e.str("t")
	stats, err := a.TopicStats(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	walk := func(w io.Writer, keep func(printedQueue)) {
		for _, mq := range sortedQueues(stats) {
			lo, hi, err := f.queueRange(ctx, a, mq, stats[mq])
			if err != nil {
				fmt.Fprintf(e.stderr, "mqadmin printMsg: %v\n", err)
				continue
			}
			fmt.Fprintf(w, "minOffset=%d, maxOffset=%d, %s\n", lo, hi, mq)
			pq := printedQueue{Queue: mq, MinOffset: lo, MaxOffset: hi, Messages: []messageJSON{}}
			readQueue(ctx, e, a, mq, f.expression, lo, hi, func(r *admin.PullResult, off int64) bool {
				switch r.Status {
				case admin.PullFound:
					for _, m := range r.Messages {
						fmt.Fprintf(w, "MSGID: %s %s BODY: %s\n", m.MsgID, javaMessageExt(m), bodyOrNot(m, printBody))
						if keep != nil {
							pq.Messages = append(pq.Messages, toMessageJSON(m))
						}
					}
				case admin.PullNoMatchedMsg:
					fmt.Fprintf(w, "%s no matched msg. status=%s, offset=%d\n", mq, r.Status, off)
				default:
					fmt.Fprintf(w, "%s print msg finished. status=%s, offset=%d\n", mq, r.Status, off)
					return false
				}
				return true
			})
			io.WriteString(w, "--------------------------------------------------------\n")
			if keep != nil {
				keep(pq)
			}
		}
	}
	if !e.json {
		return nil, func(w io.Writer) { walk(w, nil) }, nil
	}
	out := []printedQueue{}
	walk(io.Discard, func(pq printedQueue) { out = append(out, pq) })
	return out, nil, nil
}

// readQueue pulls mq from lo up to hi in batches and hands each answer, with the offset to read
// next, to each, which says whether to go on. A pull that fails ends the queue, reported on
// stderr as RocketMQ prints its stack; an answer that does not move forward ends it too.
func readQueue(ctx context.Context, e *env, a *admin.Admin, mq admin.MessageQueue, expression string, lo, hi int64,
	each func(r *admin.PullResult, next int64) bool) {
	for off := lo; off < hi; {
		r, err := a.Pull(ctx, mq, expression, off, pullBatch)
		if err != nil {
			fmt.Fprintf(e.stderr, "mqadmin %s: %v\n", e.cmd.name, err)
			return
		}
		next := r.NextBeginOffset
		if !each(r, next) || next <= off {
			return
		}
		off = next
	}
}

func bodyOrNot(m *consumer.Message, print bool) string {
	if !print {
		return "NOT PRINT BODY"
	}
	return string(m.Body)
}

type tagCount struct {
	Tag   string `json:"tag"`
	Count int64  `json:"count"`
}

// printMsgByQueue is RocketMQ's printMsgByQueue: one queue, its messages printed with -p and
// counted by tag with -f.
func printMsgByQueue(ctx context.Context, e *env) (any, func(io.Writer), error) {
	f, err := readMsgFilter(e)
	if err != nil {
		return nil, nil, err
	}
	var printMessages, printBody, byTag bool
	for _, o := range []struct {
		flag string
		dst  *bool
	}{{"p", &printMessages}, {"d", &printBody}, {"f", &byTag}} {
		if *o.dst, err = e.bool(o.flag, false); err != nil {
			return nil, nil, err
		}
	}
	qid, err := e.int("i", 0)
	if err != nil {
		return nil, nil, err
	}
	if qid < 0 || qid > math.MaxInt32 {
		return nil, nil, usageErrorf("-i: queue id %d out of range", qid)
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	mq := admin.MessageQueue{Topic: e.str("t"), BrokerName: e.str("a"), QueueID: int(qid)}
	stats, err := a.TopicStats(ctx, mq.Topic)
	if err != nil {
		return nil, nil, err
	}
	o, ok := stats[mq]
	if !ok {
		return nil, nil, fmt.Errorf("topic %s has no queue %d on broker %s", mq.Topic, mq.QueueID, mq.BrokerName)
	}
	lo, hi, err := f.queueRange(ctx, a, mq, o)
	if err != nil {
		return nil, nil, err
	}
	counts := map[string]int64{}
	pq := printedQueue{Queue: mq, MinOffset: lo, MaxOffset: hi, Messages: []messageJSON{}}
	walk := func(w io.Writer) {
		readQueue(ctx, e, a, mq, f.expression, lo, hi, func(r *admin.PullResult, _ int64) bool {
			if r.Status != admin.PullFound {
				return false
			}
			for _, m := range r.Messages {
				if byTag && strings.TrimSpace(m.Tags) != "" {
					counts[m.Tags]++
				}
				if printMessages {
					fmt.Fprintf(w, "MSGID: %s %s BODY: %s\n", m.MsgID, javaMessageExt(m), bodyOrNot(m, printBody))
					if e.json {
						pq.Messages = append(pq.Messages, toMessageJSON(m))
					}
				}
			}
			return true
		})
		for _, tc := range sortedTagCounts(counts) {
			fmt.Fprintf(w, "Tag: %-30s Count: %d\n", tc.Tag, tc.Count)
		}
	}
	if !e.json {
		return nil, walk, nil
	}
	walk(io.Discard)
	return map[string]any{"queue": pq, "tags": sortedTagCounts(counts)}, nil, nil
}

// sortedTagCounts orders tags by count, most first (RocketMQ's TagCountBean), then by tag.
func sortedTagCounts(counts map[string]int64) []tagCount {
	out := make([]tagCount, 0, len(counts))
	for t, n := range counts {
		out = append(out, tagCount{Tag: t, Count: n})
	}
	slices.SortFunc(out, func(x, y tagCount) int {
		if x.Count != y.Count {
			return int(min(max(y.Count-x.Count, -1), 1))
		}
		return strings.Compare(x.Tag, y.Tag)
	})
	return out
}

// probeProducer starts a producer for the send probes, with the invocation's name servers,
// credentials and TLS.
func probeProducer(e *env, group string) (*producer.Producer, error) {
	opts := []producer.Option{producer.WithNameServers(e.nameServers...), producer.WithSendTimeout(e.timeout),
		producer.WithGroup(group), producer.WithInstanceName(fmt.Sprintf("%s_%d", group, time.Now().UnixNano()))}
	if !e.creds.IsZero() {
		opts = append(opts, producer.WithCredentials(e.creds))
	}
	if e.tlsConfig != nil {
		opts = append(opts, producer.WithTLS(e.tlsConfig))
	}
	return producer.New(opts...)
}

// probeNumbers reads a count flag and a size flag with their defaults, bounded.
func probeNumbers(e *env, countFlag string, defCount int64, sizeFlag string, defSize int64) (int64, int64, error) {
	n, err := e.int(countFlag, defCount)
	if err != nil {
		return 0, 0, err
	}
	size, err := e.int(sizeFlag, defSize)
	if err != nil {
		return 0, 0, err
	}
	if n < 1 || n > maxProbeMessages {
		return 0, 0, usageErrorf("-%s: %d messages, want 1 to %d", countFlag, n, maxProbeMessages)
	}
	if size < 0 || size > maxProbeBytes {
		return 0, 0, usageErrorf("-%s: %d bytes, want 0 to %d", sizeFlag, size, maxProbeBytes)
	}
	return n, size, nil
}

// javaSendResult is RocketMQ's SendResult.toString.
func javaSendResult(r *producer.SendResult) string {
	return fmt.Sprintf("SendResult [sendStatus=%s, msgId=%s, offsetMsgId=%s, messageQueue=%s, queueOffset=%d]",
		r.Status, r.MsgID, r.OffsetMsgID, r.Queue, r.QueueOffset)
}

type statusRow struct {
	RTMillis int64  `json:"rtMillis"`
	Result   string `json:"sendResult"`
}

// sendMsgStatus is RocketMQ's sendMsgStatus: messages to the topic named after the broker
// (every broker has one), each with its round trip.
func sendMsgStatus(ctx context.Context, e *env) (any, func(io.Writer), error) {
	n, size, err := probeNumbers(e, "c", defaultStatusMsgCount, "s", defaultStatusMsgSize)
	if err != nil {
		return nil, nil, err
	}
	broker := e.str("b")
	p, err := probeProducer(e, statusProducerGroup)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	// As RocketMQ, one small message first: the route lookup is not timed.
	if _, err := p.SendSync(ctx, producer.NewMessage(broker, jodieBody(16))); err != nil {
		return nil, nil, err
	}
	body := jodieBody(size)
	var rows []statusRow
	for range n {
		begin := time.Now()
		r, err := p.SendSync(ctx, producer.NewMessage(broker, body))
		if err != nil {
			return rows, statusText(rows), err
		}
		rows = append(rows, statusRow{RTMillis: time.Since(begin).Milliseconds(), Result: javaSendResult(r)})
	}
	return rows, statusText(rows), nil
}

func statusText(rows []statusRow) func(io.Writer) {
	return text(func(b *strings.Builder) {
		for _, r := range rows {
			fmt.Fprintf(b, "rt=%dms, SendResult=%s\n", r.RTMillis, r.Result)
		}
	})
}

// jodieBody is sendMsgStatus's body: "hello jodie" repeated until it is at least size bytes.
func jodieBody(size int64) []byte {
	return []byte(strings.Repeat("hello jodie", int((size+10)/11)))
}

type rtRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Success    bool   `json:"sendSuccess"`
	RTMillis   int64  `json:"rtMillis"`
}

// checkMsgSendRT is RocketMQ's checkMsgSendRT: -a messages of -s bytes to the topic, the i-th
// to its i-th queue (round robin), each with its round trip, and the average without the first
// (which looks the route up).
func checkMsgSendRT(ctx context.Context, e *env) (any, func(io.Writer), error) {
	n, size, err := probeNumbers(e, "a", defaultRTAmount, "s", defaultRTMsgSize)
	if err != nil {
		return nil, nil, err
	}
	p, err := probeProducer(e, strconv.FormatInt(time.Now().UnixMilli(), 10))
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	topic := e.str("t")
	body := []byte(strings.Repeat("a", int(size)))
	var rows []rtRow
	var elapsed int64
	var last producer.MessageQueue
	for i := range n {
		sel := producer.SelectorFunc(func(qs []producer.MessageQueue, _ *producer.Message, _ any) producer.MessageQueue {
			last = qs[int(i%int64(len(qs)))]
			return last
		})
		begin := time.Now()
		_, err := p.SendOrdered(ctx, producer.NewMessage(topic, body), sel, i, producer.StrictOrder)
		rt := time.Since(begin).Milliseconds()
		if i != 0 {
			elapsed += rt
		}
		rows = append(rows, rtRow{BrokerName: last.BrokerName, QueueID: last.QueueID, Success: err == nil, RTMillis: rt})
		if ctx.Err() != nil {
			break
		}
	}
	avg := float64(elapsed) / float64(n-1)
	return map[string]any{"sends": rows, "avgRT": jsonFloat(avg)}, text(func(b *strings.Builder) {
		const format = "%-32s  %-4s  %-20s    %s\n"
		fmt.Fprintf(b, format, "#Broker Name", "#QID", "#Send Result", "#RT")
		for _, r := range rows {
			fmt.Fprintf(b, format, r.BrokerName, strconv.Itoa(r.QueueID), strconv.FormatBool(r.Success), strconv.FormatInt(r.RTMillis, 10))
		}
		fmt.Fprintf(b, "Avg RT: %.2f\n", avg)
	}), nil
}

// jsonFloat is a rate JSON can carry: NaN (one message sent, none timed) as nil.
func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

type clusterRTRow struct {
	Cluster  string  `json:"cluster"`
	Broker   string  `json:"brokerName"`
	RTMillis any     `json:"rt"`
	OK       int64   `json:"successCount"`
	Failed   int64   `json:"failCount"`
	rt       float64 // for the text
}

// clusterRT is RocketMQ's clusterRT: -a messages to the topic of each broker's name, per
// cluster, every -i seconds until interrupted. With -json it measures one round and prints it.
func clusterRT(ctx context.Context, e *env) (any, func(io.Writer), error) {
	n, size, err := probeNumbers(e, "a", defaultRTAmount, "s", defaultRTMsgSize)
	if err != nil {
		return nil, nil, err
	}
	interval, err := e.int("i", defaultRTInterval)
	if err != nil {
		return nil, nil, err
	}
	if interval < 0 {
		return nil, nil, usageErrorf("-i: %d seconds", interval)
	}
	tlog, err := e.bool("p", false)
	if err != nil {
		return nil, nil, err
	}
	room := e.str("m")
	if room == "" {
		room = "noname"
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	clusters := slices.Sorted(maps.Keys(ci.ClusterAddrTable))
	if c := e.str("c"); c != "" {
		clusters = []string{c}
	}
	p, err := probeProducer(e, strconv.FormatInt(time.Now().UnixMilli(), 10))
	if err != nil {
		return nil, nil, err
	}
	body := []byte(strings.Repeat("a", int(size)))
	round := func(emit func(clusterRTRow), missing func(string)) {
		for _, c := range clusters {
			brokers, ok := ci.ClusterAddrTable[c]
			if !ok {
				missing(c)
				break
			}
			for _, broker := range slices.Sorted(slices.Values(brokers)) {
				row := clusterRTRow{Cluster: c, Broker: broker}
				var elapsed int64
				for i := range n {
					begin := time.Now()
					if _, err := p.SendSync(ctx, producer.NewMessage(broker, body)); err != nil {
						row.Failed++
					} else {
						row.OK++
					}
					if i != 0 {
						elapsed += time.Since(begin).Milliseconds()
					}
					if ctx.Err() != nil {
						return
					}
				}
				row.rt = float64(elapsed) / float64(n-1)
				row.RTMillis = jsonFloat(row.rt)
				emit(row)
			}
		}
	}
	if e.json {
		defer p.Close()
		rows := []clusterRTRow{}
		var missingErr error
		round(func(r clusterRTRow) { rows = append(rows, r) }, func(c string) { missingErr = fmt.Errorf("cluster [%s] not exist", c) })
		return rows, nil, missingErr
	}
	return nil, func(w io.Writer) {
		defer p.Close()
		if !tlog {
			fmt.Fprintf(w, "%-24s  %-24s  %-4s  %-8s  %-8s\n", "#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount")
		}
		for {
			round(func(r clusterRTRow) {
				if tlog {
					fmt.Fprintf(w, "%s|%s|%s|%s|%s\n", time.Now().In(gmt8).Format(time.DateTime), room, r.Cluster, r.Broker,
						strconv.FormatFloat(math.Floor(r.rt+0.5), 'f', 0, 64))
					return
				}
				fmt.Fprintf(w, "%-24s  %-24s  %-8s  %-16d  %-16d\n", r.Cluster, r.Broker, fmt.Sprintf("%.2f", r.rt), r.OK, r.Failed)
			}, func(c string) { fmt.Fprintf(w, "cluster [%s] not exist", c) })
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(interval) * time.Second):
			}
		}
	}, nil
}

// gmt8 is the zone clusterRT's tlog lines are written in, RocketMQ's fixed "GMT+8".
var gmt8 = time.FixedZone("GMT+8", 8*60*60)

// javaMessageExt is RocketMQ's MessageExt.toString, properties sorted by key (Java prints them
// in hash order); printMsg prints it beside each message id.
func javaMessageExt(m *consumer.Message) string {
	props := make([]string, 0, len(m.Properties))
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		props = append(props, k+"="+m.Properties[k])
	}
	body := make([]string, len(m.Body))
	for i, c := range m.Body {
		body[i] = strconv.Itoa(int(int8(c))) // Java's bytes are signed
	}
	return fmt.Sprintf("MessageExt [brokerName=%s, queueId=%d, storeSize=%d, queueOffset=%d, sysFlag=%d, bornTimestamp=%d, "+
		"bornHost=/%s, storeTimestamp=%d, storeHost=/%s, msgId=%s, commitLogOffset=%d, bodyCRC=%d, reconsumeTimes=%d, "+
		"preparedTransactionOffset=%d, toString()=Message{topic='%s', flag=%d, properties={%s}, body=[%s], transactionId='null'}]",
		m.Queue.BrokerName, m.Queue.QueueID, m.StoreSize, m.QueueOffset, m.SysFlag, m.BornTime.UnixMilli(),
		hostString(m.BornHost), m.StoreTime.UnixMilli(), hostString(m.StoreHost), m.OffsetMsgID, m.CommitLogOffset,
		m.BodyCRC, m.ReconsumeTimes, m.PreparedTransactionOffset, m.Topic, m.Flag, strings.Join(props, ", "),
		strings.Join(body, ", "))
}

// resendProperties are the properties a consumer adds to what it pulled, or that a producer
// sets from a message's fields: a resend leaves them out.
var resendProperties = []string{message.PropertyMinOffset, message.PropertyMaxOffset, message.PropertyConsumeStartTimestamp,
	message.PropertyTags, message.PropertyKeys}

// resendMessage sends m again as RocketMQ's queryMsgById -s does: same topic, tags, keys and
// properties (its unique key too), a new stored copy.
func resendMessage(ctx context.Context, p *producer.Producer, m *consumer.Message) (*producer.SendResult, error) {
	msg := producer.NewMessage(m.Topic, m.Body).WithTags(m.Tags).WithKeys(m.Keys...)
	for k, v := range m.Properties {
		if !slices.Contains(resendProperties, k) {
			msg.WithProperty(k, v)
		}
	}
	return p.SendSync(ctx, msg)
}

// errNotOffsetID explains a message id queryMsgById cannot read as an offset id.
func errNotOffsetID(id string, err error) error {
	if errors.Is(err, message.ErrMsgID) {
		return usageErrorf("%s is not an offset message id (%v): a unique key, the id a producer returns, needs -t TOPIC "+
			"(or queryMsgByUniqueKey)", id, err)
	}
	return err
}
