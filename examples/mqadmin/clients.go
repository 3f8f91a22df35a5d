package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/route"
)

// maxQueueNums bounds the queues one route's queue data may make a command walk.
const maxQueueNums = 1 << 16

// The commands about clients: who produces, what a consumer holds, how a topic's queues would
// be shared, and skipping a group's backlog (RocketMQ 4.9's producerConnection,
// consumerStatus, allocateMQ, skipAccumulatedMessage).

func init() {
	commands = append(commands,
		command{name: "producerConnection", desc: "Query producer's socket connection and client version", exec: producerConnection,
			options: []option{{short: "g", long: "producerGroup", usage: "producer group name", required: true},
				{short: "t", long: "topic", usage: "topic name", required: true}}},
		command{name: "consumerStatus", desc: "Query consumer's internal data structure", exec: consumerStatus,
			options: []option{{short: "g", long: "consumerGroup", usage: "consumer group name", required: true},
				{short: "i", long: "clientId", usage: "The consumer's client id"},
				{short: "b", long: "brokerAddr", usage: "broker address"},
				{short: "s", long: "jstack", usage: "Run jstack command in the consumer progress", boolean: true}}},
		command{name: "allocateMQ", desc: "Allocate MQ", exec: allocateMQ,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "i", long: "ipList", usage: "ipList", required: true}}},
		command{name: "skipAccumulatedMessage", desc: "Skip all messages that are accumulated (not consumed) currently",
			exec: skipAccumulatedMessage,
			options: []option{{short: "g", long: "group", usage: "set the consumer group", required: true},
				{short: "t", long: "topic", usage: "set the topic", required: true},
				{short: "f", long: "force", usage: "set the force rollback by timestamp switch[true|false]"}}},
	)
}

func producerConnection(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	conns, err := a.ProducerConnection(ctx, e.str("g"), e.str("t"))
	if err != nil {
		return nil, nil, err
	}
	return conns, text(func(b *strings.Builder) {
		for i, c := range conns {
			fmt.Fprintf(b, "%04d  %-32s %-22s %-8s %s\n", i+1, c.ClientID, c.ClientAddr, c.Language, versionDesc(c.Version))
		}
	}), nil
}

// maxStatusClients bounds the consumers consumerStatus asks, one request each.
const maxStatusClients = 1024

type consumerStatusRow struct {
	ClientID string                     `json:"clientId"`
	Version  string                     `json:"version"`
	File     string                     `json:"file,omitempty"`
	Info     *admin.ConsumerRunningInfo `json:"runningInfo,omitempty"`
	Error    string                     `json:"error,omitempty"`
}

// consumerStatus is RocketMQ's consumerStatus: with -i one consumer's running info; without,
// every member's, each written (as RocketMQ does) to the file <now ms>/<client id> under the
// working directory, then whether the members subscribe alike and which queues look stuck.
func consumerStatus(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	group, jstack := e.str("g"), e.has("s")
	if id := e.str("i"); id != "" {
		info, err := a.ConsumerRunningInfo(ctx, group, id, jstack)
		if err != nil {
			return nil, nil, err
		}
		return info, text(func(b *strings.Builder) { b.WriteString(formatRunningInfo(info)) }), nil
	}
	var cc *admin.ConsumerConnection
	if addr := e.str("b"); addr != "" {
		cc, err = a.ConsumerConnectionAt(ctx, group, addr)
	} else {
		cc, err = a.ConsumerConnection(ctx, group)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(cc.Connections) > maxStatusClients {
		cc.Connections = cc.Connections[:maxStatusClients]
	}
	now := time.Now()
	dir := strconv.FormatInt(now.UnixMilli(), 10)
	var rows []consumerStatusRow
	infos := map[string]*admin.ConsumerRunningInfo{}
	for _, c := range cc.Connections {
		row := consumerStatusRow{ClientID: c.ClientID, Version: versionDesc(c.Version)}
		info, err := a.ConsumerRunningInfo(ctx, group, c.ClientID, jstack)
		if err != nil {
			// As RocketMQ, a member that does not answer is left out of the table, its error
			// on stderr.
			row.Error = err.Error()
			fmt.Fprintf(e.stderr, "mqadmin consumerStatus: %v\n", err)
			rows = append(rows, row)
			continue
		}
		row.Info, infos[c.ClientID] = info, info
		if !e.json {
			row.File = filepath.Join(dir, fileName(c.ClientID))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, nil, err
			}
			if err := os.WriteFile(row.File, []byte(formatRunningInfo(info)), 0o644); err != nil {
				return nil, nil, err
			}
		}
		rows = append(rows, row)
	}
	return rows, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-10s %-40s %-20s %s\n", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
		i := 1
		for _, r := range rows {
			if r.Info == nil {
				continue
			}
			fmt.Fprintf(b, "%-10d %-40s %-20s %s\n", i, r.ClientID, r.Version, r.File)
			i++
		}
		if len(infos) == 0 {
			return
		}
		if !sameSubscriptions(infos, now) {
			b.WriteString("\n\nWARN: Different subscription in the same group of consumer!!!")
			return
		}
		b.WriteString("\n\nSame subscription in the same group of consumer")
		b.WriteString("\n\nRebalance OK\n") // RocketMQ's analyzeRebalance finds nothing either
		for _, id := range slices.Sorted(maps.Keys(infos)) {
			b.WriteString(stuckQueues(id, infos[id], now))
		}
	}), nil
}

// fileName makes a client id a safe file name: an id comes from the network and must not
// climb out of the directory.
func fileName(id string) string {
	f := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@:-", r) {
			return r
		}
		return '_'
	}, id)
	if f == "" || f == "." || f == ".." {
		return "_" + f
	}
	return f
}

// isPush reports whether a consumer's properties say it is a push consumer.
func isPush(info *admin.ConsumerRunningInfo) bool {
	return info.Properties[protocol.PropConsumeType] == "CONSUME_PASSIVELY"
}

// sameSubscriptions is RocketMQ's ConsumerRunningInfo.analyzeSubscription: push consumers
// started more than two minutes ago must all subscribe alike, and to something.
func sameSubscriptions(infos map[string]*admin.ConsumerRunningInfo, now time.Time) bool {
	ids := slices.Sorted(maps.Keys(infos))
	first := infos[ids[0]]
	started, _ := strconv.ParseInt(first.Properties[protocol.PropConsumerStartTimestamp], 10, 64)
	if !isPush(first) || now.UnixMilli()-started <= 2*60*1000 {
		return true
	}
	key := func(info *admin.ConsumerRunningInfo) string {
		var sb strings.Builder
		for _, s := range info.Subscriptions {
			tags := slices.Sorted(slices.Values(s.TagsSet))
			fmt.Fprintf(&sb, "%s\x00%s\x00%t\x00%s\x00%s\x01", s.Topic, s.SubString, s.ClassFilterMode, s.ExpressionType,
				strings.Join(tags, "\x00"))
		}
		return sb.String()
	}
	want := key(first)
	for _, id := range ids[1:] {
		if key(infos[id]) != want {
			return false
		}
	}
	return len(infos[ids[len(ids)-1]].Subscriptions) > 0
}

// stuckQueues is RocketMQ's ConsumerRunningInfo.analyzeProcessQueue: an orderly push consumer's
// queues it cannot lock or unlock, a concurrent one's queues with messages cached but nothing
// consumed for a minute.
func stuckQueues(clientID string, info *admin.ConsumerRunningInfo, now time.Time) string {
	if !isPush(info) {
		return ""
	}
	orderly := info.Properties[protocol.PropConsumeOrderly] == "true"
	var sb strings.Builder
	for _, mq := range slices.SortedFunc(maps.Keys(info.Queues), rebalance.CompareQueues) {
		pq := info.Queues[mq]
		switch {
		case orderly && !pq.Locked:
			fmt.Fprintf(&sb, "%s %s can't lock for a while, %dms\n", clientID, mq, now.UnixMilli()-pq.LastLockTimestamp)
		case orderly && pq.Droped && pq.TryUnlockTimes > 0:
			fmt.Fprintf(&sb, "%s %s unlock %d times, still failed\n", clientID, mq, pq.TryUnlockTimes)
		case !orderly:
			if diff := now.UnixMilli() - pq.LastConsumeTimestamp; diff > 60*1000 && pq.CachedMsgCount > 0 {
				fmt.Fprintf(&sb, "%s %s can't consume for a while, maybe blocked, %dms\n", clientID, mq, diff)
			}
		}
	}
	return sb.String()
}

// formatRunningInfo is RocketMQ's ConsumerRunningInfo.formatString (properties sorted by key;
// Java prints them in hash order).
func formatRunningInfo(info *admin.ConsumerRunningInfo) string {
	var sb strings.Builder
	sb.WriteString("#Consumer Properties#\n")
	for _, k := range slices.Sorted(maps.Keys(info.Properties)) {
		fmt.Fprintf(&sb, "%-40s: %s\n", k, info.Properties[k])
	}
	sb.WriteString("\n\n#Consumer Subscription#\n")
	for i, s := range info.Subscriptions {
		fmt.Fprintf(&sb, "%03d Topic: %-40s ClassFilter: %-8t SubExpression: %s\n", i+1, s.Topic, s.ClassFilterMode, s.SubString)
	}
	queues := slices.SortedFunc(maps.Keys(info.Queues), rebalance.CompareQueues)
	sb.WriteString("\n\n#Consumer Offset#\n")
	fmt.Fprintf(&sb, "%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset")
	for _, mq := range queues {
		fmt.Fprintf(&sb, "%-32s  %-32s  %-4d  %-20d\n", mq.Topic, mq.BrokerName, mq.QueueID, info.Queues[mq].CommitOffset)
	}
	sb.WriteString("\n\n#Consumer MQ Detail#\n")
	fmt.Fprintf(&sb, "%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo")
	for _, mq := range queues {
		fmt.Fprintf(&sb, "%-64s  %-32s  %-4d  %s\n", mq.Topic, mq.BrokerName, mq.QueueID, processQueueString(info.Queues[mq]))
	}
	sb.WriteString("\n\n#Consumer RT&TPS#\n")
	fmt.Fprintf(&sb, "%-64s  %14s %14s %14s %14s %18s %25s\n", "#Topic", "#Pull RT", "#Pull TPS", "#Consume RT",
		"#ConsumeOK TPS", "#ConsumeFailed TPS", "#ConsumeFailedMsgsInHour")
	for _, topic := range slices.Sorted(maps.Keys(info.Status)) {
		s := info.Status[topic]
		fmt.Fprintf(&sb, "%-32s  %14.2f %14.2f %14.2f %14.2f %18.2f %25d\n", topic, s.PullRT, s.PullTPS, s.ConsumeRT,
			s.ConsumeOKTPS, s.ConsumeFailedTPS, s.ConsumeFailedMsgs)
	}
	if info.Jstack != "" {
		sb.WriteString("\n\n#Consumer jstack#\n")
		sb.WriteString(info.Jstack)
	}
	return sb.String()
}

// processQueueString is RocketMQ's ProcessQueueInfo.toString.
func processQueueString(pq admin.ProcessQueueInfo) string {
	return fmt.Sprintf("ProcessQueueInfo [commitOffset=%d, cachedMsgMinOffset=%d, cachedMsgMaxOffset=%d, cachedMsgCount=%d, "+
		"cachedMsgSizeInMiB=%d, transactionMsgMinOffset=%d, transactionMsgMaxOffset=%d, transactionMsgCount=%d, locked=%t, "+
		"tryUnlockTimes=%d, lastLockTimestamp=%s, droped=%t, lastPullTimestamp=%s, lastConsumeTimestamp=%s]",
		pq.CommitOffset, pq.CachedMsgMinOffset, pq.CachedMsgMaxOffset, pq.CachedMsgCount, pq.CachedMsgSizeInMiB,
		pq.TransactionMsgMinOffset, pq.TransactionMsgMaxOffset, pq.TransactionMsgCount, pq.Locked, pq.TryUnlockTimes,
		compactTime(pq.LastLockTimestamp), pq.Droped, compactTime(pq.LastPullTimestamp), compactTime(pq.LastConsumeTimestamp))
}

// compactTime is UtilAll.timeMillisToHumanString: yyyyMMddHHmmssSSS in local time.
func compactTime(ms int64) string {
	t := time.UnixMilli(ms).Local()
	return t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond))
}

// allocateMQ is RocketMQ's allocateMQ: how the averaging strategy would share the topic's
// readable queues among the clients of -i, printed as RebalanceResult's JSON.
func allocateMQ(ctx context.Context, e *env) (any, func(io.Writer), error) {
	var ips []string
	for ip := range strings.SplitSeq(e.str("i"), ",") {
		ips = append(ips, ip) // as RocketMQ: kept as given, empty ones too
	}
	if len(ips) > maxStatusClients {
		return nil, nil, usageErrorf("-i: at most %d clients", maxStatusClients)
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	topic := e.str("t")
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	var queues []admin.MessageQueue
	for _, qd := range r.QueueDatas {
		if route.IsReadable(qd.Perm) {
			for i := range min(int(qd.ReadQueueNums), maxQueueNums) {
				queues = append(queues, admin.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
			}
		}
	}
	rebalance.SortQueues(queues)
	result := map[string][]admin.MessageQueue{}
	for _, ip := range ips {
		result[ip] = rebalance.Averagely().Allocate("aa", ip, queues, ips)
		if result[ip] == nil {
			result[ip] = []admin.MessageQueue{}
		}
	}
	out := map[string]any{"result": result}
	return out, text(func(b *strings.Builder) {
		// RemotingSerializable.toJson(rr, false): compact, a queue as its three fields.
		b.WriteString(`{"result":{`)
		for i, ip := range slices.Sorted(maps.Keys(result)) {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%s:[", strconv.Quote(ip))
			for j, q := range result[ip] {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(b, `{"brokerName":%s,"queueId":%d,"topic":%s}`, strconv.Quote(q.BrokerName), q.QueueID, strconv.Quote(q.Topic))
			}
			b.WriteByte(']')
		}
		b.WriteString("}}\n")
	}), nil
}

// skipAccumulatedMessage is RocketMQ's skipAccumulatedMessage: the group's offsets of the
// topic move to the end of each queue (resetOffsetByTime at "now").
func skipAccumulatedMessage(ctx context.Context, e *env) (any, func(io.Writer), error) {
	force, err := e.bool("f", true)
	if err != nil {
		return nil, nil, err
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	table, err := a.ResetOffsetByTime(ctx, e.str("g"), e.str("t"), time.Time{}, force)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]resetRow, 0, len(table))
	for _, mq := range sortedQueues(table) {
		rows = append(rows, resetRow{BrokerName: mq.BrokerName, QueueID: mq.QueueID, Offset: table[mq]})
	}
	return rows, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-40s  %-40s  %-40s\n", "#brokerName", "#queueId", "#offset")
		for _, r := range rows {
			fmt.Fprintf(b, "%-40s  %-40d  %-40d\n", front(r.BrokerName, 32), r.QueueID, r.Offset)
		}
	}), nil
}
