package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/rebalance"
	"github.com/mqgo/mq/route"
)

// Defaults of mqadmin's commands.
const (
	defaultTopicQueueNums  = 8   // updateTopic -r/-w
	defaultConsumeMessages = 128 // consumeMessage -c
)

// commands are mqadmin's; each file's init appends its own, and help lists them in
// listOrder.
var commands []command

// listOrder is the order RocketMQ's mqadmin lists its commands in (4.9's MQAdminStartup, then
// RocketMQ 5's haStatus, getAclConfig and controller commands); a command not named here is
// listed after them.
var listOrder = []string{"updateTopic", "deleteTopic", "updateSubGroup", "deleteSubGroup", "updateBrokerConfig",
	"updateTopicPerm", "topicRoute", "topicStatus", "topicClusterList", "brokerStatus", "queryMsgById", "queryMsgByKey",
	"queryMsgByUniqueKey", "queryMsgByOffset", "queryMsgTraceById", "printMsg", "printMsgByQueue", "sendMsgStatus",
	"brokerConsumeStats", "producerConnection", "consumerConnection", "consumerProgress", "consumerStatus",
	"cloneGroupOffset", "clusterList", "topicList", "updateKvConfig", "deleteKvConfig", "wipeWritePerm", "addWritePerm",
	"resetOffsetByTime", "skipAccumulatedMessage", "updateOrderConf", "cleanExpiredCQ", "deleteExpiredCommitLog",
	"cleanUnusedTopic", "statsAll", "allocateMQ", "checkMsgSendRT", "clusterRT", "getNamesrvConfig",
	"updateNamesrvConfig", "getBrokerConfig", "queryCq", "sendMessage", "consumeMessage", "updateAclConfig",
	"deleteAclConfig", "clusterAclConfigVersion", "updateGlobalWhiteAddr", "getAclConfig", "haStatus",
	"getControllerMetaData", "electMaster"}

func init() {
	commands = append(commands, []command{
		{name: "clusterList", desc: "List all of clusters", exec: clusterList,
			options: []option{{short: "m", long: "moreStats", usage: "Print more stats", boolean: true},
				{short: "i", long: "interval", usage: "specify intervals numbers, it is in seconds"}}},
		{name: "brokerStatus", desc: "Fetch broker runtime status data", exec: brokerStatus,
			options: []option{{short: "b", long: "brokerAddr", usage: "Broker address"},
				{short: "c", long: "clusterName", usage: "which cluster"}},
			check: oneOf("b", "c")},
		{name: "topicList", desc: "Fetch all topic list from name server", exec: topicList,
			options: []option{{short: "c", long: "clusterModel", usage: "clusterModel", boolean: true}}},
		{name: "topicRoute", desc: "Examine topic route info", exec: topicRoute,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "l", long: "list", usage: "Use list format to print data", boolean: true}}},
		{name: "topicStatus", desc: "Examine topic Status info", exec: topicStatus,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true}}},
		{name: "updateTopic", desc: "Update or create topic", exec: updateTopic,
			options: []option{{short: "b", long: "brokerAddr", usage: "create topic to which broker"},
				{short: "c", long: "clusterName", usage: "create topic to which cluster"},
				{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "r", long: "readQueueNums", usage: "set read queue nums (default 8)"},
				{short: "w", long: "writeQueueNums", usage: "set write queue nums (default 8)"},
				{short: "p", long: "perm", usage: "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]"},
				{short: "o", long: "order", usage: "set topic's order(true|false)"},
				{short: "a", long: "attributes", usage: "attribute(+a=b,+c=d,-e), e.g. +message.type=FIFO"}},
			check: oneOf("b", "c")},
		{name: "deleteTopic", desc: "Delete topic from broker and NameServer.", exec: deleteTopic,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "c", long: "clusterName", usage: "delete topic from which cluster", required: true}}},
		{name: "updateSubGroup", desc: "Update or create subscription group", exec: updateSubGroup,
			options: []option{{short: "b", long: "brokerAddr", usage: "create subscription group to which broker"},
				{short: "c", long: "clusterName", usage: "create subscription group to which cluster"},
				{short: "g", long: "groupName", usage: "consumer group name", required: true},
				{short: "s", long: "consumeEnable", usage: "consume enable"},
				{short: "m", long: "consumeFromMinEnable", usage: "from min offset"},
				{short: "d", long: "consumeBroadcastEnable", usage: "broadcast"},
				{short: "o", long: "consumeMessageOrderly", usage: "consume message orderly"},
				{short: "q", long: "retryQueueNums", usage: "retry queue nums"},
				{short: "r", long: "retryMaxTimes", usage: "retry max times"},
				{short: "i", long: "brokerId", usage: "consumer from which broker id"},
				{short: "w", long: "whichBrokerWhenConsumeSlowly", usage: "which broker id when consume slowly"},
				{short: "a", long: "notifyConsumerIdsChanged", usage: "notify consumerId changed"}},
			check: oneOf("b", "c")},
		{name: "deleteSubGroup", desc: "Delete subscription group from broker.", exec: deleteSubGroup,
			options: []option{{short: "b", long: "brokerAddr", usage: "delete subscription group from which broker"},
				{short: "c", long: "clusterName", usage: "delete subscription group from which cluster"},
				{short: "g", long: "groupName", usage: "subscription group name", required: true},
				{short: "r", long: "removeOffset", usage: "remove offset (true|false, default false)"}},
			check: oneOf("b", "c")},
		{name: "consumerProgress", desc: "Query consumers's progress, speed", exec: consumerProgress,
			options: []option{{short: "g", long: "groupName", usage: "consumer group name"}}},
		{name: "consumerConnection", desc: "Query consumer's socket connection, client version and subscription", exec: consumerConnection,
			options: []option{{short: "g", long: "consumerGroup", usage: "consumer group name", required: true}}},
		{name: "resetOffsetByTime", desc: "Reset consumer offset by timestamp(without client restart).", exec: resetOffsetByTime,
			options: []option{{short: "g", long: "group", usage: "set the consumer group", required: true},
				{short: "t", long: "topic", usage: "set the topic", required: true},
				{short: "s", long: "timestamp", usage: "set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]", required: true},
				{short: "f", long: "force", usage: "set the force rollback by timestamp switch[true|false] (default true)"}}},
		{name: "queryMsgById", desc: "Query Message by Id", exec: queryMsgByID,
			options: []option{{short: "i", long: "msgId", usage: "Message Id (offset id; with -t also a unique key); several separated by commas", required: true},
				{short: "t", long: "topic", usage: "topic, to look up message ids that are unique keys"},
				{short: "g", long: "consumerGroup", usage: "consumer group name, with -d: have that consumer consume the message directly"},
				{short: "d", long: "clientId", usage: "the consumer's client id (consumerConnection lists them)"},
				{short: "s", long: "sendMessage", usage: "resend message (true|false): each message is sent again to its topic"},
				{short: "u", long: "unitName", usage: "unit name (accepted; mq has no units)"}},
			check: func(e *env) error {
				if e.has("g") != e.has("d") {
					return usageErrorf("-g and -d go together")
				}
				return nil
			}},
		{name: "queryMsgByKey", desc: "Query Message by Key", exec: queryMsgByKey,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "k", long: "msgKey", usage: "Message Key", required: true}}},
		{name: "queryMsgByOffset", desc: "Query Message by offset", exec: queryMsgByOffset,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "b", long: "brokerName", usage: "Broker Name", required: true},
				{short: "i", long: "queueId", usage: "Queue Id", required: true},
				{short: "o", long: "offset", usage: "Queue Offset", required: true}}},
		{name: "sendMessage", desc: "Send a message", exec: sendMessage,
			options: []option{{short: "t", long: "topic", usage: "Topic name", required: true},
				{short: "p", long: "body", usage: "UTF-8 string format of the message body", required: true},
				{short: "k", long: "key", usage: "Message keys"},
				{short: "c", long: "tags", usage: "Message tags"},
				{short: "b", long: "broker", usage: "Send message to target broker"},
				{short: "i", long: "qid", usage: "Send message to target queue"}},
			check: requires("i", "b", "Broker name must be set if the queue is chosen!")},
		{name: "consumeMessage", desc: "Consume message", exec: consumeMessage,
			options: []option{{short: "t", long: "topic", usage: "Topic name", required: true},
				{short: "b", long: "brokerName", usage: "Broker name"},
				{short: "i", long: "queueId", usage: "Queue Id"},
				{short: "o", long: "offset", usage: "Queue offset"},
				{short: "g", long: "consumerGroup", usage: "Consumer group name (accepted; the pull commits nothing)"},
				{short: "c", long: "MessageNumber", usage: "Number of message to be consumed (default 128)"}},
			check: func(e *env) error {
				if err := requires("i", "b", "Please set the brokerName before queueId!")(e); err != nil {
					return err
				}
				return requires("o", "i", "Please set queueId before offset!")(e)
			}},
		{name: "getControllerMetaData", desc: "Get controller cluster's metadata", exec: getControllerMetaData, controller: true,
			options: []option{{short: "a", long: "controllerAddress", usage: "the address of controller", required: true}}},
		{name: "electMaster", desc: "Re-elect the specified broker as master", exec: electMaster, controller: true,
			options: []option{{short: "a", long: "controllerAddress", usage: "The address of controller", required: true},
				{short: "b", long: "brokerId", usage: "The id of the broker which requires to become master", required: true},
				{short: "bn", long: "brokerName", usage: "The broker name of the replicas that require to be manipulated (mqadmin's -n, which here is the name server)", required: true},
				{short: "c", long: "clusterName", usage: "the clusterName of broker", required: true}}},
	}...)
}

// oneOf requires exactly one of two options (a broker or a cluster).
func oneOf(a, b string) func(*env) error {
	return func(e *env) error {
		if e.has(a) == e.has(b) {
			return usageErrorf("give exactly one of -%s and -%s", a, b)
		}
		return nil
	}
}

// requires refuses option a without option b.
func requires(a, b, msg string) func(*env) error {
	return func(e *env) error {
		if e.has(a) && !e.has(b) {
			return usageErrorf("%s", msg)
		}
		return nil
	}
}

// text builds a table printer from a function writing into a builder.
func text(f func(b *strings.Builder)) func(io.Writer) {
	return func(w io.Writer) {
		var b strings.Builder
		f(&b)
		io.WriteString(w, b.String())
	}
}

type clusterRow struct {
	Cluster    string            `json:"cluster"`
	BrokerName string            `json:"brokerName"`
	BrokerID   int64             `json:"brokerId"`
	Addr       string            `json:"addr"`
	Runtime    map[string]string `json:"runtime"`
	Error      string            `json:"error,omitempty"`
}

// clusterList is RocketMQ's clusterList: a row per broker of every cluster, its runtime
// figures (-m: the messages in and out yesterday and today instead); with -i the table again
// every -i seconds until interrupted (-json prints one table).
func clusterList(ctx context.Context, e *env) (any, func(io.Writer), error) {
	interval, err := e.int("i", 0)
	if err != nil {
		return nil, nil, err
	}
	if interval < 0 {
		return nil, nil, usageErrorf("-i: %d seconds", interval)
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	more := e.has("m")
	rows, err := clusterRows(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	print := func(w io.Writer, rows []clusterRow) {
		var b strings.Builder
		if more {
			printClusterMoreStats(&b, rows)
		} else {
			printClusterBaseInfo(&b, rows, time.Now())
		}
		io.WriteString(w, b.String())
	}
	if !e.has("i") || e.json {
		return rows, func(w io.Writer) { print(w, rows) }, nil
	}
	return nil, func(w io.Writer) {
		for {
			print(w, rows)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(interval) * time.Second):
			}
			next, err := clusterRows(ctx, a)
			if err != nil {
				fmt.Fprintf(e.stderr, "mqadmin clusterList: %v\n", err)
				continue
			}
			rows = next
		}
	}, nil
}

// clusterRows asks the cluster info and each broker's runtime figures.
func clusterRows(ctx context.Context, a *admin.Admin) ([]clusterRow, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var rows []clusterRow
	for _, cluster := range slices.Sorted(maps.Keys(ci.ClusterAddrTable)) {
		for _, name := range slices.Sorted(slices.Values(ci.ClusterAddrTable[cluster])) {
			bd, ok := ci.BrokerAddrTable[name]
			if !ok {
				continue
			}
			for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
				row := clusterRow{Cluster: cluster, BrokerName: name, BrokerID: id, Addr: bd.BrokerAddrs[id]}
				// As mqadmin, a broker that does not answer still gets its row.
				if row.Runtime, err = a.BrokerRuntimeInfo(ctx, row.Addr); err != nil {
					row.Error = err.Error()
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, nil
}

// orNA is a runtime figure as a table cell: a broker that did not report it (or is down) gets
// "N/A", never an empty cell, so that every row splits into the same columns.
func orNA(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return "N/A"
	}
	return strings.ReplaceAll(s, " ", "_")
}

func printClusterBaseInfo(b *strings.Builder, rows []clusterRow, now time.Time) {
	const format = "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s\n"
	fmt.Fprintf(b, format, "#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
		"#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")
	for _, r := range rows {
		kv := r.Runtime
		hour := 0.0
		if ms, err := strconv.ParseInt(kv["earliestMessageTimeStamp"], 10, 64); err == nil && ms > 0 {
			hour = float64(now.UnixMilli()-ms) / 1000 / 60 / 60
		}
		space, _ := strconv.ParseFloat(kv["commitLogDiskRatio"], 64)
		fmt.Fprintf(b, format, r.Cluster, r.BrokerName, strconv.FormatInt(r.BrokerID, 10), r.Addr, orNA(kv["brokerVersionDesc"]),
			fmt.Sprintf("%9.2f(%s,%sms)", firstFloat(kv["putTps"]), orNA(kv["sendThreadPoolQueueSize"]),
				orNA(kv["sendThreadPoolQueueHeadWaitTimeMills"])),
			fmt.Sprintf("%9.2f(%s,%sms)", firstFloat(kv["getTransferedTps"]), orNA(kv["pullThreadPoolQueueSize"]),
				orNA(kv["pullThreadPoolQueueHeadWaitTimeMills"])),
			orNA(kv["pageCacheLockTimeMills"]), fmt.Sprintf("%2.2f", hour), fmt.Sprintf("%.4f", space))
	}
}

// printClusterMoreStats is clusterList -m: per broker, the messages put and got yesterday and
// today, from the day marks of its runtime figures (0 where a broker did not report them).
func printClusterMoreStats(b *strings.Builder, rows []clusterRow) {
	fmt.Fprintf(b, "%-16s  %-32s %14s %14s %14s %14s\n", "#Cluster Name", "#Broker Name", "#InTotalYest",
		"#OutTotalYest", "#InTotalToday", "#OutTotalToday")
	for _, r := range rows {
		var marks [6]int64
		ok := true
		for i, k := range []string{"msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgPutTotalTodayNow",
			"msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalTodayNow"} {
			v, err := strconv.ParseInt(r.Runtime[k], 10, 64)
			ok = ok && err == nil
			marks[i] = v
		}
		var inYest, outYest, inToday, outToday int64
		if ok { // as RocketMQ: one figure missing and the row shows zeros
			inYest, outYest = marks[1]-marks[0], marks[4]-marks[3]
			inToday, outToday = marks[2]-marks[1], marks[5]-marks[4]
		}
		fmt.Fprintf(b, "%-16s  %-32s %14d %14d %14d %14d\n", r.Cluster, r.BrokerName, inYest, outYest, inToday, outToday)
	}
}

// firstFloat reads the first of the space-separated figures RocketMQ's TPS keys hold (the
// 10 s, 1 min and 10 min rates); absent or malformed is 0.
func firstFloat(s string) float64 {
	f, _ := strconv.ParseFloat(strings.SplitN(s, " ", 2)[0], 64)
	return f
}

func brokerStatus(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	if addr := e.str("b"); addr != "" {
		kv, err := a.BrokerRuntimeInfo(ctx, addr)
		if err != nil {
			return nil, nil, err
		}
		return map[string]map[string]string{addr: kv}, text(func(b *strings.Builder) {
			for _, k := range slices.Sorted(maps.Keys(kv)) {
				fmt.Fprintf(b, "%-32s: %s\n", k, kv[k])
			}
		}), nil
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	names, ok := ci.ClusterAddrTable[e.str("c")]
	if !ok {
		return nil, nil, fmt.Errorf("cluster %s not found", e.str("c"))
	}
	all := map[string]map[string]string{}
	for _, name := range names {
		for _, addr := range ci.BrokerAddrTable[name].BrokerAddrs {
			kv, err := a.BrokerRuntimeInfo(ctx, addr)
			if err != nil {
				return nil, nil, err
			}
			all[addr] = kv
		}
	}
	return all, text(func(b *strings.Builder) {
		for _, addr := range slices.Sorted(maps.Keys(all)) {
			for _, k := range slices.Sorted(maps.Keys(all[addr])) {
				fmt.Fprintf(b, "%-24s %-32s: %s\n", addr, k, all[addr][k])
			}
		}
	}), nil
}

type topicClusterRow struct {
	Cluster string `json:"cluster"`
	Topic   string `json:"topic"`
	Group   string `json:"consumerGroup"`
}

// adminAndTopics is the admin client and every topic the name servers know.
func adminAndTopics(ctx context.Context, e *env) (*admin.Admin, []string, error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	topics, err := a.TopicList(ctx)
	if err != nil {
		return nil, nil, err
	}
	return a, topics, nil
}

func topicList(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, topics, err := adminAndTopics(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	if !e.has("c") {
		return topics, text(func(b *strings.Builder) {
			for _, t := range topics {
				fmt.Fprintf(b, "%s\n", t)
			}
		}), nil
	}
	var rows []topicClusterRow
	for _, t := range topics {
		if names.IsRetryTopic(t) || strings.HasPrefix(t, names.DLQPrefix) {
			continue
		}
		cluster := ""
		if r, err := a.TopicRoute(ctx, t); err == nil && len(r.BrokerDatas) > 0 {
			cluster = r.BrokerDatas[0].Cluster
		}
		// As RocketMQ: the brokers' QUERY_TOPIC_CONSUME_BY_WHO, nobody where it fails.
		gs, _ := a.TopicConsumedBy(ctx, t)
		if len(gs) == 0 {
			gs = []string{""}
		}
		for _, g := range gs {
			rows = append(rows, topicClusterRow{Cluster: cluster, Topic: t, Group: g})
		}
	}
	return rows, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-20s  %-48s  %-48s\n", "#Cluster Name", "#Topic", "#Consumer Group")
		for _, r := range rows {
			fmt.Fprintf(b, "%-20s  %-64s  %-64s\n", front(r.Cluster, 20), front(r.Topic, 64), front(r.Group, 64))
		}
	}), nil
}

func topicRoute(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	r, err := a.TopicRoute(ctx, e.str("t"))
	if err != nil {
		return nil, nil, err
	}
	raw := json.RawMessage(r.Encode())
	if !e.has("l") {
		return raw, text(func(b *strings.Builder) {
			pretty, _ := json.MarshalIndent(raw, "", "\t") // raw is valid JSON: Encode wrote it
			b.Write(pretty)
			b.WriteByte('\n')
		}), nil
	}
	return raw, text(func(b *strings.Builder) {
		const format = "%-45s %-32s %-50s %-10s %-11s %-5s\n"
		queues := map[string]route.QueueData{}
		for _, q := range r.QueueDatas {
			queues[q.BrokerName] = q
		}
		brokers := slices.Clone(r.BrokerDatas)
		slices.SortFunc(brokers, func(x, y route.BrokerData) int { return strings.Compare(x.BrokerName, y.BrokerName) })
		fmt.Fprintf(b, format, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
		var totalRead, totalWrite int32
		for _, bd := range brokers {
			q := queues[bd.BrokerName]
			totalRead += q.ReadQueueNums
			totalWrite += q.WriteQueueNums
			fmt.Fprintf(b, format, bd.Cluster, bd.BrokerName, javaMap(bd.BrokerAddrs), strconv.Itoa(int(q.ReadQueueNums)),
				strconv.Itoa(int(q.WriteQueueNums)), strconv.Itoa(int(q.Perm)))
		}
		b.WriteString(strings.Repeat("-", 158) + "\n")
		fmt.Fprintf(b, format, "Total:", strconv.Itoa(len(queues)), "", strconv.Itoa(int(totalRead)), strconv.Itoa(int(totalWrite)), "")
	}), nil
}

// javaMap formats broker addresses as Java's Map.toString: {0=host:port, 1=host:port}.
func javaMap(addrs map[int64]string) string {
	parts := make([]string, 0, len(addrs))
	for _, id := range slices.Sorted(maps.Keys(addrs)) {
		parts = append(parts, fmt.Sprintf("%d=%s", id, addrs[id]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

type queueOffsetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	MinOffset  int64  `json:"minOffset"`
	MaxOffset  int64  `json:"maxOffset"`
	LastUpdate int64  `json:"lastUpdateTimestamp"`
}

func topicStatus(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	stats, err := a.TopicStats(ctx, e.str("t"))
	if err != nil {
		return nil, nil, err
	}
	rows := make([]queueOffsetRow, 0, len(stats))
	for _, mq := range sortedQueues(stats) {
		o := stats[mq]
		row := queueOffsetRow{BrokerName: mq.BrokerName, QueueID: mq.QueueID, MinOffset: o.MinOffset, MaxOffset: o.MaxOffset}
		if !o.LastUpdate.IsZero() {
			row.LastUpdate = o.LastUpdate.UnixMilli()
		}
		rows = append(rows, row)
	}
	return rows, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-32s  %-4s  %-20s  %-20s    %s\n", "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
		for _, r := range rows {
			last := ""
			if r.LastUpdate > 0 {
				last = humanTime(time.UnixMilli(r.LastUpdate))
			}
			fmt.Fprintf(b, "%-32s  %-4d  %-20d  %-20d    %s\n", front(r.BrokerName, 32), r.QueueID, r.MinOffset, r.MaxOffset, last)
		}
	}), nil
}

func sortedQueues[V any](m map[admin.MessageQueue]V) []admin.MessageQueue {
	return slices.SortedFunc(maps.Keys(m), rebalance.CompareQueues)
}

// targets are the broker addresses a command acts on: -b, or every master of -c.
func targets(ctx context.Context, e *env, a *admin.Admin) ([]string, error) {
	if addr := e.str("b"); addr != "" {
		return []string{addr}, nil
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	brokerNames, ok := ci.ClusterAddrTable[e.str("c")]
	if !ok {
		return nil, fmt.Errorf("cluster %s not found", e.str("c"))
	}
	var addrs []string
	for _, name := range slices.Sorted(slices.Values(brokerNames)) {
		bd := ci.BrokerAddrTable[name]
		if addr := bd.MasterAddr(); addr != "" {
			addrs = append(addrs, addr)
		}
	}
	return addrs, nil
}

type changedRow struct {
	Addr   string `json:"brokerAddr"`
	Config any    `json:"config"`
}

func updateTopic(ctx context.Context, e *env) (any, func(io.Writer), error) {
	r, err := e.int("r", defaultTopicQueueNums)
	if err != nil {
		return nil, nil, err
	}
	w, err := e.int("w", defaultTopicQueueNums)
	if err != nil {
		return nil, nil, err
	}
	perm, err := e.int("p", int64(route.PermReadWrite))
	if err != nil {
		return nil, nil, err
	}
	order, err := e.bool("o", false)
	if err != nil {
		return nil, nil, err
	}
	if r <= 0 || w <= 0 || r > 1<<16 || w > 1<<16 {
		return nil, nil, usageErrorf("queue numbers must be between 1 and 65536")
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	cfg := admin.TopicConfig{Topic: e.str("t"), ReadQueueNums: int(r), WriteQueueNums: int(w), Perm: int(perm), Order: order,
		Attributes: strings.TrimSpace(e.str("a"))}
	done, err := onTargets(ctx, e, a, cfg, func(addr string) error { return a.CreateTopic(ctx, addr, cfg) })
	if err != nil {
		return nil, nil, err
	}
	return done, text(func(b *strings.Builder) {
		for _, d := range done {
			fmt.Fprintf(b, "create topic to %s success.\n", d.Addr)
		}
		fmt.Fprintf(b, "TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=%t, attributes=%s]\n",
			cfg.Topic, cfg.ReadQueueNums, cfg.WriteQueueNums, route.PermString(int32(cfg.Perm)), cfg.Order, attributesString(cfg.Attributes))
	}), nil
}

// onTargets applies a config to every broker -b or -c names, in turn, and returns a row for
// each; the first failure stops it.
func onTargets(ctx context.Context, e *env, a *admin.Admin, cfg any, apply func(addr string) error) ([]changedRow, error) {
	addrs, err := targets(ctx, e, a)
	if err != nil {
		return nil, err
	}
	done := make([]changedRow, 0, len(addrs))
	for _, addr := range addrs {
		if err := apply(addr); err != nil {
			return nil, err
		}
		done = append(done, changedRow{Addr: addr, Config: cfg})
	}
	return done, nil
}

func deleteTopic(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	topic, cluster := e.str("t"), e.str("c")
	if err := a.DeleteTopic(ctx, cluster, topic); err != nil {
		return nil, nil, err
	}
	return map[string]string{"topic": topic, "cluster": cluster}, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "delete topic [%s] from cluster [%s] success.\n", topic, cluster)
		fmt.Fprintf(b, "delete topic [%s] from NameServer success.\n", topic)
	}), nil
}

func updateSubGroup(ctx context.Context, e *env) (any, func(io.Writer), error) {
	cfg := admin.NewSubscriptionGroupConfig(e.str("g"))
	var err error
	if cfg.ConsumeEnable, err = e.bool("s", cfg.ConsumeEnable); err != nil {
		return nil, nil, err
	}
	if cfg.ConsumeBroadcastEnable, err = e.bool("d", cfg.ConsumeBroadcastEnable); err != nil {
		return nil, nil, err
	}
	if cfg.ConsumeMessageOrderly, err = e.bool("o", cfg.ConsumeMessageOrderly); err != nil {
		return nil, nil, err
	}
	q, err := e.int("q", int64(cfg.RetryQueueNums))
	if err != nil {
		return nil, nil, err
	}
	r, err := e.int("r", int64(cfg.RetryMaxTimes))
	if err != nil {
		return nil, nil, err
	}
	cfg.RetryQueueNums, cfg.RetryMaxTimes = int(q), int(r)
	if cfg.BrokerID, err = e.int("i", cfg.BrokerID); err != nil {
		return nil, nil, err
	}
	if cfg.WhichBrokerWhenConsumeSlowly, err = e.int("w", cfg.WhichBrokerWhenConsumeSlowly); err != nil {
		return nil, nil, err
	}
	fromMin, err := e.bool("m", true)
	if err != nil {
		return nil, nil, err
	}
	notify, err := e.bool("a", true)
	if err != nil {
		return nil, nil, err
	}
	cfg.DisableConsumeFromMin, cfg.DisableNotifyConsumerIdsChanged = !fromMin, !notify
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	done, err := onTargets(ctx, e, a, cfg, func(addr string) error { return a.CreateSubscriptionGroup(ctx, addr, cfg) })
	if err != nil {
		return nil, nil, err
	}
	return done, text(func(b *strings.Builder) {
		for _, d := range done {
			fmt.Fprintf(b, "create subscription group to %s success.\n", d.Addr)
		}
		fmt.Fprintf(b, "SubscriptionGroupConfig [groupName=%s, consumeEnable=%t, consumeFromMinEnable=%t, consumeBroadcastEnable=%t, consumeMessageOrderly=%t, retryQueueNums=%d, retryMaxTimes=%d, brokerId=%d, whichBrokerWhenConsumeSlowly=%d, notifyConsumerIdsChangedEnable=%t]\n",
			cfg.GroupName, cfg.ConsumeEnable, fromMin, cfg.ConsumeBroadcastEnable, cfg.ConsumeMessageOrderly, cfg.RetryQueueNums, cfg.RetryMaxTimes, cfg.BrokerID, cfg.WhichBrokerWhenConsumeSlowly, notify)
	}), nil
}

// deleteSubGroup is RocketMQ's deleteSubGroup: the group's settings go from -b or from every
// master of -c, with its offsets there too under -r true; with -c its retry and dead-letter
// topics are deleted from the cluster as well (a failure there is reported, as RocketMQ prints
// it, without failing the command).
func deleteSubGroup(ctx context.Context, e *env) (any, func(io.Writer), error) {
	removeOffset, err := e.bool("r", false)
	if err != nil {
		return nil, nil, err
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	addrs, err := targets(ctx, e, a)
	if err != nil {
		return nil, nil, err
	}
	group, cluster := e.str("g"), e.str("c")
	for _, addr := range addrs {
		if err := a.RemoveSubscriptionGroup(ctx, addr, group, removeOffset); err != nil {
			return nil, nil, err
		}
	}
	var deletedTopics []string
	if cluster != "" {
		for _, topic := range []string{names.RetryTopic(group), names.DLQPrefix + group} {
			if err := a.DeleteTopic(ctx, cluster, topic); err != nil {
				fmt.Fprintf(e.stderr, "mqadmin deleteSubGroup: delete topic %s: %v\n", topic, err)
				continue
			}
			deletedTopics = append(deletedTopics, topic)
		}
	}
	return map[string]any{"group": group, "brokerAddrs": addrs, "removeOffset": removeOffset, "deletedTopics": deletedTopics},
		text(func(b *strings.Builder) {
			for _, addr := range addrs {
				if cluster != "" {
					fmt.Fprintf(b, "delete subscription group [%s] from broker [%s] in cluster [%s] success.\n", group, addr, cluster)
					continue
				}
				fmt.Fprintf(b, "delete subscription group [%s] from broker [%s] success.\n", group, addr)
			}
			for _, topic := range deletedTopics {
				fmt.Fprintf(b, "delete topic [%s] from cluster [%s] success.\n", topic, cluster)
				fmt.Fprintf(b, "delete topic [%s] from NameServer success.\n", topic)
			}
		}), nil
}

type progressRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int    `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

type progress struct {
	Group      string        `json:"group"`
	Queues     []progressRow `json:"queues"`
	ConsumeTPS float64       `json:"consumeTps"`
	DiffTotal  int64         `json:"diffTotal"`
}

type groupRow struct {
	Group        string `json:"group"`
	Count        int    `json:"count"`
	Version      string `json:"version"`
	ConsumeType  string `json:"consumeType"`
	MessageModel string `json:"messageModel"`
	ConsumeTPS   int64  `json:"consumeTps"`
	DiffTotal    int64  `json:"diffTotal"`
}

func consumerProgress(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	if group := e.str("g"); group != "" {
		stats, err := a.ConsumeStats(ctx, group, "")
		if err != nil {
			return nil, nil, err
		}
		p := progress{Group: group, ConsumeTPS: stats.ConsumeTPS, DiffTotal: stats.Diff(), Queues: []progressRow{}}
		for _, mq := range sortedQueues(stats.Offsets) {
			o := stats.Offsets[mq]
			row := progressRow{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: mq.QueueID, BrokerOffset: o.BrokerOffset,
				ConsumerOffset: o.ConsumerOffset, Diff: o.BrokerOffset - o.ConsumerOffset}
			if !o.LastTimestamp.IsZero() {
				row.LastTimestamp = o.LastTimestamp.UnixMilli()
			}
			p.Queues = append(p.Queues, row)
		}
		return p, text(func(b *strings.Builder) {
			fmt.Fprintf(b, "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s\n", "#Topic", "#Broker Name", "#QID",
				"#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
			for _, r := range p.Queues {
				last := "N/A"
				if r.LastTimestamp > 0 {
					last = time.UnixMilli(r.LastTimestamp).Local().Format(time.DateTime)
				}
				fmt.Fprintf(b, "%-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s\n", front(r.Topic, 64), front(r.BrokerName, 32),
					r.QueueID, r.BrokerOffset, r.ConsumerOffset, r.Diff, last)
			}
			fmt.Fprintf(b, "\nConsume TPS: %.2f\nDiff Total: %d\n", p.ConsumeTPS, p.DiffTotal)
		}), nil
	}
	groups, err := a.ConsumerGroups(ctx)
	if err != nil {
		return nil, nil, err
	}
	rows := []groupRow{}
	for _, g := range groups {
		row := groupRow{Group: g}
		// As mqadmin, a group whose figures cannot be had is listed without them.
		if stats, err := a.ConsumeStats(ctx, g, ""); err == nil {
			row.ConsumeTPS, row.DiffTotal = int64(stats.ConsumeTPS), stats.Diff()
		}
		if cc, err := a.ConsumerConnection(ctx, g); err == nil {
			row.Count, row.MessageModel = len(cc.Connections), cc.MessageModel
			row.ConsumeType = consumeTypeDesc(cc.ConsumeType)
			minVersion := -1
			for _, c := range cc.Connections {
				if minVersion < 0 || c.Version < minVersion {
					minVersion = c.Version
				}
			}
			row.Version = versionDesc(minVersion)
		}
		if row.Count == 0 {
			row.Version = "OFFLINE"
		}
		rows = append(rows, row)
	}
	return rows, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s\n", "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")
		for _, r := range rows {
			fmt.Fprintf(b, "%-64s  %-6d  %-24s %-5s  %-14s  %-7d  %d\n", front(r.Group, 64), r.Count, r.Version, r.ConsumeType,
				r.MessageModel, r.ConsumeTPS, r.DiffTotal)
		}
	}), nil
}

// consumeTypeDesc is GroupConsumeInfo.consumeTypeDesc: PUSH or PULL.
func consumeTypeDesc(t string) string {
	switch t {
	case "CONSUME_PASSIVELY":
		return "PUSH"
	case "CONSUME_ACTIVELY":
		return "PULL"
	}
	return ""
}

func consumerConnection(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	cc, err := a.ConsumerConnection(ctx, e.str("g"))
	if err != nil {
		return nil, nil, err
	}
	return cc, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-36s %-22s %-10s %s\n", "#ClientId", "#ClientAddr", "#Language", "#Version")
		for _, c := range cc.Connections {
			fmt.Fprintf(b, "%-36s %-22s %-10s %s\n", c.ClientID, c.ClientAddr, c.Language, versionDesc(c.Version))
		}
		fmt.Fprintf(b, "\nBelow is subscription:\n%-20s %s\n", "#Topic", "#SubExpression")
		for _, s := range cc.Subscriptions {
			fmt.Fprintf(b, "%-20s %s\n", s.Topic, s.Expression)
		}
		fmt.Fprintf(b, "\nConsumeType: %s\nMessageModel: %s\nConsumeFromWhere: %s\n", cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere)
	}), nil
}

type resetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Offset     int64  `json:"offset"`
}

func resetOffsetByTime(ctx context.Context, e *env) (any, func(io.Writer), error) {
	group, topic, stamp := e.str("g"), e.str("t"), e.str("s")
	t, ms, err := parseTimestamp(stamp)
	if err != nil {
		return nil, nil, err
	}
	force, err := e.bool("f", true)
	if err != nil {
		return nil, nil, err
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	table, err := a.ResetOffsetByTime(ctx, group, topic, t, force)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]resetRow, 0, len(table))
	for _, mq := range sortedQueues(table) {
		rows = append(rows, resetRow{BrokerName: mq.BrokerName, QueueID: mq.QueueID, Offset: table[mq]})
	}
	return rows, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "rollback consumer offset by specified group[%s], topic[%s], force[%t], timestamp(string)[%s], timestamp(long)[%d]\n",
			group, topic, force, stamp, ms)
		fmt.Fprintf(b, "%-40s  %-40s  %-40s\n", "#brokerName", "#queueId", "#offset")
		for _, r := range rows {
			fmt.Fprintf(b, "%-40s  %-40d  %-40d\n", front(r.BrokerName, 32), r.QueueID, r.Offset)
		}
	}), nil
}

// maxMsgIDs bounds how many ids one queryMsgById looks up.
const maxMsgIDs = 64

func queryMsgByID(ctx context.Context, e *env) (any, func(io.Writer), error) {
	var ids []string
	for _, id := range strings.Split(e.str("i"), ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || len(ids) > maxMsgIDs {
		return nil, nil, usageErrorf("-i: give 1 to %d message ids", maxMsgIDs)
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	if e.has("g") {
		return consumeDirectly(ctx, a, e.str("g"), e.str("d"), ids)
	}
	resend, err := e.bool("s", false)
	if err != nil {
		return nil, nil, err
	}
	topic := e.str("t")
	var msgs []*consumer.Message
	for _, id := range ids {
		m, err := lookupID(ctx, a, topic, id)
		if err != nil {
			if topic == "" {
				err = errNotOffsetID(id, err)
			}
			return nil, nil, err
		}
		msgs = append(msgs, m)
	}
	if e.has("s") {
		return resendMessages(ctx, e, ids, msgs, resend)
	}
	tracks := messageTracks(ctx, e, a, msgs)
	return messagesJSON(msgs), text(func(b *strings.Builder) {
		for i, m := range msgs {
			if i > 0 {
				b.WriteByte('\n')
			}
			printMessage(b, m, true)
			printTracks(b, tracks[i])
		}
	}), nil
}

type resendRow struct {
	MsgID  string `json:"originalMsgId"`
	Result string `json:"sendResult"`
}

// resendMessages is queryMsgById -s: with true each message is sent again (RocketMQ's "prepare
// resend msg" and the SendResult, a line each); with false nothing happens, as in RocketMQ.
func resendMessages(ctx context.Context, e *env, ids []string, msgs []*consumer.Message, resend bool) (any, func(io.Writer), error) {
	rows := []resendRow{}
	if !resend {
		return rows, text(func(*strings.Builder) {}), nil
	}
	p, err := probeProducer(e, "ReSendMsgById")
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	out := func() func(io.Writer) {
		return text(func(b *strings.Builder) {
			for _, r := range rows {
				fmt.Fprintf(b, "prepare resend msg. originalMsgId=%s\n%s\n", r.MsgID, r.Result)
			}
		})
	}
	for i, m := range msgs {
		res, err := resendMessage(ctx, p, m)
		if err != nil {
			return nil, out(), fmt.Errorf("resend %s: %w", ids[i], err)
		}
		rows = append(rows, resendRow{MsgID: ids[i], Result: javaSendResult(res)})
	}
	return rows, out(), nil
}

// consumeDirectly has one consumer run its listener on each message (mqadmin queryMsgById -g -d)
// and prints the answers as ConsumeMessageDirectlyResult's toString does.
func consumeDirectly(ctx context.Context, a *admin.Admin, group, clientID string, ids []string) (any, func(io.Writer), error) {
	type resultJSON struct {
		MsgID          string `json:"msgId"`
		Order          bool   `json:"order"`
		AutoCommit     bool   `json:"autoCommit"`
		ConsumeResult  string `json:"consumeResult"`
		Remark         string `json:"remark"`
		SpentTimeMills int64  `json:"spentTimeMills"`
	}
	var out []resultJSON
	for _, id := range ids {
		r, err := a.ConsumeMessageDirectly(ctx, group, clientID, id)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, resultJSON{MsgID: id, Order: r.Order, AutoCommit: r.AutoCommit, ConsumeResult: r.ConsumeResult,
			Remark: r.Remark, SpentTimeMills: r.Spent.Milliseconds()})
	}
	return out, text(func(b *strings.Builder) {
		for _, r := range out {
			remark := r.Remark
			if remark == "" {
				remark = "null"
			}
			fmt.Fprintf(b, "ConsumeMessageDirectlyResult [order=%t, autoCommit=%t, consumeResult=%s, remark=%s, spentTimeMills=%d]\n",
				r.Order, r.AutoCommit, r.ConsumeResult, remark, r.SpentTimeMills)
		}
	}), nil
}

// lookupID finds a message by offset id or, given a topic, by unique key: the two kinds have
// the same length, so a unique key is tried first when a topic says where to look, as the
// cheaper and more common one, and the offset id reading second.
func lookupID(ctx context.Context, a *admin.Admin, topic, id string) (*consumer.Message, error) {
	if topic == "" {
		return a.QueryMessageByID(ctx, id)
	}
	m, err := a.QueryMessageByUniqueKey(ctx, topic, id)
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, admin.ErrMessageNotFound) {
		return nil, err
	}
	return a.QueryMessageByID(ctx, id)
}

func messagesJSON(msgs []*consumer.Message) []messageJSON {
	out := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, toMessageJSON(m))
	}
	return out
}

func queryMsgByKey(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	msgs, err := a.QueryMessageByKey(ctx, e.str("t"), e.str("k"), admin.DefaultQueryMaxNum, time.Time{}, time.Time{})
	if err != nil {
		return nil, nil, err
	}
	return messagesJSON(msgs), text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-50s %4s %40s\n", "#Message ID", "#QID", "#Offset")
		for _, m := range msgs {
			fmt.Fprintf(b, "%-50s %4d %40d\n", m.MsgID, m.Queue.QueueID, m.QueueOffset)
		}
	}), nil
}

// queueOption reads -t, -b and -i as a queue.
func queueOption(e *env) (admin.MessageQueue, error) {
	qid, err := e.int("i", 0)
	if err != nil {
		return admin.MessageQueue{}, err
	}
	if qid < 0 || qid > 1<<16 {
		return admin.MessageQueue{}, usageErrorf("-i: queue id %d out of range", qid)
	}
	return admin.MessageQueue{Topic: e.str("t"), BrokerName: e.str("b"), QueueID: int(qid)}, nil
}

func queryMsgByOffset(ctx context.Context, e *env) (any, func(io.Writer), error) {
	mq, err := queueOption(e)
	if err != nil {
		return nil, nil, err
	}
	offset, err := e.int("o", 0)
	if err != nil {
		return nil, nil, err
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	m, err := a.QueryMessageByOffset(ctx, mq, offset)
	if err != nil {
		return nil, nil, err
	}
	return toMessageJSON(m), text(func(b *strings.Builder) { printMessage(b, m, true) }), nil
}

type sendRow struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int    `json:"queueId"`
	Status      string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueOffset int64  `json:"queueOffset"`
}

func sendMessage(ctx context.Context, e *env) (any, func(io.Writer), error) {
	msg := producer.NewMessage(e.str("t"), []byte(e.str("p"))).WithTags(e.str("c")).WithKeys(strings.Fields(e.str("k"))...)
	var target *admin.MessageQueue
	if e.has("i") {
		mq, err := queueOption(e)
		if err != nil {
			return nil, nil, err
		}
		target = &mq
	}
	opts := []producer.Option{producer.WithNameServers(e.nameServers...), producer.WithSendTimeout(e.timeout),
		producer.WithGroup(strconv.FormatInt(time.Now().UnixMilli(), 10)), producer.WithRetries(2)}
	if !e.creds.IsZero() {
		opts = append(opts, producer.WithCredentials(e.creds))
	}
	if e.tlsConfig != nil {
		opts = append(opts, producer.WithTLS(e.tlsConfig))
	}
	p, err := producer.New(opts...)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	var res *producer.SendResult
	if target != nil {
		res, err = p.SendToQueue(ctx, msg, *target)
	} else {
		res, err = p.SendSync(ctx, msg)
	}
	if err != nil {
		return nil, nil, err
	}
	row := sendRow{BrokerName: res.Queue.BrokerName, QueueID: res.Queue.QueueID, Status: res.Status.String(),
		MsgID: res.MsgID, OffsetMsgID: res.OffsetMsgID, QueueOffset: res.QueueOffset}
	return row, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-32s  %-4s  %-20s    %s\n", "#Broker Name", "#QID", "#Send Result", "#MsgId")
		fmt.Fprintf(b, "%-32s  %-4d  %-20s    %s\n", row.BrokerName, row.QueueID, row.Status, row.MsgID)
	}), nil
}

type consumed struct {
	Queue    admin.MessageQueue `json:"queue"`
	Messages []messageJSON      `json:"messages"`
}

func consumeMessage(ctx context.Context, e *env) (any, func(io.Writer), error) {
	count, err := e.int("c", defaultConsumeMessages)
	if err != nil {
		return nil, nil, err
	}
	if count <= 0 {
		return nil, nil, usageErrorf("Please input a positive messageNumber!")
	}
	from, err := e.int("o", -1)
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
	queues := sortedQueues(stats)
	if e.has("b") {
		queues = slices.DeleteFunc(queues, func(mq admin.MessageQueue) bool {
			return mq.BrokerName != e.str("b") || (e.has("i") && strconv.Itoa(mq.QueueID) != e.str("i"))
		})
		if len(queues) == 0 {
			return nil, nil, fmt.Errorf("no queue of topic %s on broker %s matches", topic, e.str("b"))
		}
	}
	var out []consumed
	var notes []string
	left := count
	for _, mq := range queues {
		if left == 0 {
			break
		}
		o := stats[mq]
		begin := o.MinOffset
		if from >= 0 {
			if from >= o.MaxOffset {
				notes = append(notes, fmt.Sprintf("%s no matched msg, offset=%d\n", mq, from))
				continue
			}
			begin = max(begin, from)
		}
		end := min(o.MaxOffset, begin+left) // exclusive
		c := consumed{Queue: mq, Messages: []messageJSON{}}
		var printed []*consumer.Message
		for off := begin; off < end; {
			msgs, next, err := a.PullMessages(ctx, mq, off, int(min(end-off, admin.MaxPullNums)))
			if err != nil {
				return nil, nil, err
			}
			for _, m := range msgs {
				if m.QueueOffset >= begin && m.QueueOffset < end {
					printed = append(printed, m)
					c.Messages = append(c.Messages, toMessageJSON(m))
				}
			}
			if len(msgs) == 0 || next <= off {
				break // nothing more there: the queue's end moved, or its start did
			}
			off = next
		}
		left -= int64(len(printed))
		out = append(out, c)
		notes = append(notes, formatConsumed(mq, printed))
	}
	return out, text(func(b *strings.Builder) {
		for _, n := range notes {
			b.WriteString(n)
		}
	}), nil
}

func formatConsumed(mq admin.MessageQueue, msgs []*consumer.Message) string {
	var b strings.Builder
	if len(msgs) > 0 {
		b.WriteString("Consume ok\n")
	}
	for _, m := range msgs {
		fmt.Fprintf(&b, "MSGID: %s %s BODY: %s\n", m.MsgID, m, m.Body)
	}
	fmt.Fprintf(&b, "%s print msg finished.\n", mq)
	return b.String()
}

// attributesString prints an attributes modification as RocketMQ 5's tool prints the map it
// parsed it into ({+message.type=FIFO, -e=}), keys sorted.
func attributesString(mods string) string {
	if mods == "" {
		return "{}"
	}
	var kvs []string
	for kv := range strings.SplitSeq(mods, ",") {
		k, v, _ := strings.Cut(kv, "=")
		kvs = append(kvs, k+"="+v)
	}
	slices.Sort(kvs)
	return "{" + strings.Join(kvs, ", ") + "}"
}
