package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/internal/names"
)

// The operators' commands of issue 31 over the broker's and name service's admin codes, with
// RocketMQ's names, flags and output. Their init runs after commands.go's (files initialize in
// name order), so they append to its list.

func init() {
	commands = append(commands,
		command{name: "getBrokerConfig", desc: "Get broker config by cluster or special broker.", exec: getBrokerConfig,
			options: []option{{short: "b", long: "brokerAddr", usage: "get which broker"},
				{short: "c", long: "clusterName", usage: "get which cluster"}},
			check: oneOf("b", "c")},
		command{name: "updateBrokerConfig", desc: "Update broker's config.", exec: updateBrokerConfig,
			options: []option{{short: "b", long: "brokerAddr", usage: "update which broker"},
				{short: "c", long: "clusterName", usage: "update which cluster"},
				{short: "a", long: "updateAllBroker", usage: "update all brokers include slave"},
				{short: "k", long: "key", usage: "config key", required: true},
				{short: "v", long: "value", usage: "config value", required: true}},
			check: oneOf("b", "c")},
		command{name: "wipeWritePerm", desc: "Wipe write perm of broker in all name server you defined in the -n param.",
			exec: writePerm(true), options: []option{{short: "b", long: "brokerName", usage: "broker name", required: true}}},
		command{name: "addWritePerm", desc: "Add write perm of broker in all name server you defined in the -n param.",
			exec: writePerm(false), options: []option{{short: "b", long: "brokerName", usage: "broker name", required: true}}},
		command{name: "getNamesrvConfig", desc: "Get configs of name server.", exec: getNamesrvConfig},
		command{name: "updateNamesrvConfig", desc: "Update configs of name server.", exec: updateNamesrvConfig,
			options: []option{{short: "k", long: "key", usage: "config key", required: true},
				{short: "v", long: "value", usage: "config value", required: true}}},
		command{name: "brokerConsumeStats", desc: "Fetch broker consume stats data.", exec: brokerConsumeStats,
			options: []option{{short: "b", long: "brokerAddr", usage: "Broker address", required: true},
				{short: "t", long: "timeoutMillis", usage: "request timeout Millis"},
				{short: "l", long: "level", usage: "threshold of print diff"},
				{short: "o", long: "order", usage: "order topic"}}},
		command{name: "cloneGroupOffset", desc: "Clone offset from other group.", exec: cloneGroupOffset,
			options: []option{{short: "s", long: "srcGroup", usage: "set source consumer group", required: true},
				{short: "d", long: "destGroup", usage: "set destination consumer group", required: true},
				{short: "t", long: "topic", usage: "set the topic", required: true},
				{short: "o", long: "offline", usage: "the group or the topic is offline"}}},
		command{name: "queryCq", desc: "Query cq command.", exec: queryCq,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "q", long: "queue", usage: "queue num, ie. 1", required: true},
				{short: "i", long: "index", usage: "start queue index.", required: true},
				{short: "c", long: "count", usage: "how many."},
				{short: "b", long: "broker", usage: "broker addr."},
				{short: "g", long: "consumer", usage: "consumer group."}}},
		command{name: "cleanExpiredCQ", desc: "Clean expired ConsumeQueue on broker.", exec: onBrokers("cleanExpiredCQ",
			func(a *admin.Admin) func(context.Context, string) error { return a.CleanExpiredConsumeQueue }),
			options: []option{{short: "b", long: "brokerAddr", usage: "Broker address"},
				{short: "c", long: "cluster", usage: "clustername"}}},
		command{name: "topicClusterList", desc: "Get cluster info for topic.", exec: topicClusterList,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true}}},
		command{name: "statsAll", desc: "Topic and Consumer tps stats.", exec: statsAll,
			options: []option{{short: "a", long: "activeTopic", usage: "print active topic only", boolean: true},
				{short: "t", long: "topic", usage: "print select topic only"}}},
	)
}

// configSection is one broker's or name server's configuration.
type configSection struct {
	Title  string            `json:"title"`
	Addr   string            `json:"addr"`
	Config map[string]string `json:"config"`
}

// printConfig writes sections as RocketMQ's getBrokerConfig and getNamesrvConfig do: a title
// line, then "key<padding>=  value" (keys sorted here; Java prints them in hash order).
func printConfig(b *strings.Builder, sections []configSection) {
	for _, s := range sections {
		fmt.Fprintf(b, "============%s============\n", s.Title)
		if len(s.Config) == 0 {
			fmt.Fprintf(b, "Broker[%s] has no config property!\n", s.Addr)
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(s.Config)) {
			fmt.Fprintf(b, "%-50s=  %s\n", k, s.Config[k])
		}
		b.WriteString("\n")
	}
}

func getBrokerConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	var sections []configSection
	if addr := e.str("b"); addr != "" {
		kv, err := a.BrokerConfig(ctx, addr)
		if err != nil {
			return nil, nil, err
		}
		sections = append(sections, configSection{Title: addr, Addr: addr, Config: kv})
	} else {
		ci, err := a.ClusterInfo(ctx)
		if err != nil {
			return nil, nil, err
		}
		brokerNames, ok := ci.ClusterAddrTable[e.str("c")]
		if !ok {
			return nil, nil, fmt.Errorf("cluster %s not found", e.str("c"))
		}
		for _, name := range slices.Sorted(slices.Values(brokerNames)) {
			bd := ci.BrokerAddrTable[name]
			master := bd.MasterAddr()
			for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
				addr := bd.BrokerAddrs[id]
				title := "Master: " + addr
				if id != 0 {
					title = "My Master: " + master + "=====Slave: " + addr
				}
				kv, err := a.BrokerConfig(ctx, addr)
				if err != nil {
					return nil, nil, err
				}
				sections = append(sections, configSection{Title: title, Addr: addr, Config: kv})
			}
		}
	}
	return sections, text(func(b *strings.Builder) { printConfig(b, sections) }), nil
}

func updateBrokerConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	kv := map[string]string{e.str("k"): e.str("v")}
	var addrs []string
	if addr := e.str("b"); addr != "" {
		addrs = []string{addr}
	} else if e.has("a") {
		// As RocketMQ's -a: any value means masters and slaves.
		if addrs, err = a.ClusterBrokers(ctx, e.str("c")); err != nil {
			return nil, nil, err
		}
	} else if addrs, err = targets(ctx, e, a); err != nil {
		return nil, nil, err
	}
	var done []string
	var firstErr error
	for _, addr := range addrs {
		// As RocketMQ, one broker's refusal does not stop the others; the command fails after.
		if err := a.UpdateBrokerConfig(ctx, addr, kv); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		done = append(done, addr)
	}
	out := text(func(b *strings.Builder) {
		for _, addr := range done {
			fmt.Fprintf(b, "update broker config success, %s\n", addr)
		}
	})
	if firstErr != nil {
		return nil, out, firstErr
	}
	return map[string]any{"updated": done, "config": kv}, out, nil
}

type writePermRow struct {
	NameServer string `json:"nameServer"`
	Count      int    `json:"count"`
	Error      string `json:"error,omitempty"`
}

// writePerm is wipeWritePerm (wipe) or addWritePerm: each name server of -n in turn, a line
// each, as RocketMQ prints them; the command fails when one name server did.
func writePerm(wipe bool) func(ctx context.Context, e *env) (any, func(io.Writer), error) {
	return func(ctx context.Context, e *env) (any, func(io.Writer), error) {
		a, err := e.adminClient()
		if err != nil {
			return nil, nil, err
		}
		broker := e.str("b")
		verb, op := "add", a.AddWritePerm
		if wipe {
			verb, op = "wipe", a.WipeWritePerm
		}
		var rows []writePermRow
		var firstErr error
		for _, ns := range a.NameServers() {
			n, err := op(ctx, ns, broker)
			row := writePermRow{NameServer: ns, Count: n}
			if err != nil {
				row.Error = err.Error()
				if firstErr == nil {
					firstErr = err
				}
			}
			rows = append(rows, row)
		}
		out := text(func(b *strings.Builder) {
			for _, r := range rows {
				if r.Error != "" {
					fmt.Fprintf(b, "%s write perm of broker[%s] in name server[%s] Failed\n", verb, broker, r.NameServer)
					continue
				}
				fmt.Fprintf(b, "%s write perm of broker[%s] in name server[%s] OK, %d\n", verb, broker, r.NameServer, r.Count)
			}
		})
		if firstErr != nil {
			return nil, out, firstErr
		}
		return rows, out, nil
	}
}

func getNamesrvConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	all, err := a.NamesrvConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	var sections []configSection
	for _, ns := range a.NameServers() {
		sections = append(sections, configSection{Title: ns, Addr: ns, Config: all[ns]})
	}
	return sections, text(func(b *strings.Builder) { printConfig(b, sections) }), nil
}

func updateNamesrvConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	k, v := e.str("k"), e.str("v")
	if err := a.UpdateNamesrvConfig(ctx, map[string]string{k: v}); err != nil {
		return nil, nil, err
	}
	servers := a.NameServers()
	return map[string]any{"nameServers": servers, "key": k, "value": v}, text(func(b *strings.Builder) {
		// Java prints the list as [a, b].
		fmt.Fprintf(b, "update name server config success![%s]\n%s : %s\n", strings.Join(servers, ", "), k, v)
	}), nil
}

type brokerConsumeRow struct {
	Topic          string `json:"topic"`
	Group          string `json:"group"`
	BrokerName     string `json:"brokerName"`
	QueueID        int    `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

func brokerConsumeStats(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	order, err := e.bool("o", false)
	if err != nil {
		return nil, nil, err
	}
	level, err := e.int("l", 0)
	if err != nil {
		return nil, nil, err
	}
	if ms, err := e.int("t", 0); err != nil {
		return nil, nil, err
	} else if ms > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(ms)*time.Millisecond)
		defer cancel()
	}
	st, err := a.BrokerConsumeStats(ctx, e.str("b"), order)
	if err != nil {
		return nil, nil, err
	}
	rows := []brokerConsumeRow{}
	for _, g := range st.Stats {
		for _, mq := range sortedQueues(g.Offsets) {
			o := g.Offsets[mq]
			diff := o.BrokerOffset - o.ConsumerOffset
			// As RocketMQ: under the level, or never consumed (no last time), a queue is not shown.
			if diff < level || o.LastTimestamp.IsZero() {
				continue
			}
			rows = append(rows, brokerConsumeRow{Topic: mq.Topic, Group: g.Group, BrokerName: mq.BrokerName, QueueID: mq.QueueID,
				BrokerOffset: o.BrokerOffset, ConsumerOffset: o.ConsumerOffset, Diff: diff, LastTimestamp: o.LastTimestamp.UnixMilli()})
		}
	}
	result := map[string]any{"brokerAddr": st.BrokerAddr, "queues": rows, "totalDiff": st.TotalDiff}
	return result, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-64s  %-64s  %-32s  %-4s  %-20s  %-20s  %-20s  %s\n", "#Topic", "#Group", "#Broker Name", "#QID",
			"#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
		for _, r := range rows {
			fmt.Fprintf(b, "%-64s  %-64s  %-32s  %-4d  %-20d  %-20d  %-20d  %s\n", front(r.Topic, 64), r.Group, front(r.BrokerName, 32),
				r.QueueID, r.BrokerOffset, r.ConsumerOffset, r.Diff, time.UnixMilli(r.LastTimestamp).Local().Format(time.DateTime))
		}
		fmt.Fprintf(b, "\nDiff Total: %d\n", st.TotalDiff)
	}), nil
}

func cloneGroupOffset(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	offline, err := e.bool("o", false)
	if err != nil {
		return nil, nil, err
	}
	src, dst, topic := e.str("s"), e.str("d"), e.str("t")
	if err := a.CloneGroupOffset(ctx, src, dst, topic, offline); err != nil {
		return nil, nil, err
	}
	return map[string]string{"srcGroup": src, "destGroup": dst, "topic": topic}, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "clone group offset success. srcGroup[%s], destGroup=[%s], topic[%s]\n", src, dst, topic)
	}), nil
}

func queryCq(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	q, err := e.int("q", 0)
	if err != nil {
		return nil, nil, err
	}
	index, err := e.int("i", 0)
	if err != nil {
		return nil, nil, err
	}
	count, err := e.int("c", 10)
	if err != nil {
		return nil, nil, err
	}
	if q < 0 || q > 1<<31-1 || count < 0 || count > 1<<31-1 {
		return nil, nil, usageErrorf("-q and -c must be integers from 0 to 2147483647")
	}
	topic, addr := e.str("t"), e.str("b")
	if addr == "" {
		// As RocketMQ: the first broker of the topic's route, its master.
		r, err := a.TopicRoute(ctx, topic)
		if err != nil {
			return nil, nil, err
		}
		for _, bd := range r.BrokerDatas {
			if addr = bd.MasterAddr(); addr != "" {
				break
			}
		}
		if addr == "" {
			return nil, nil, fmt.Errorf("topic %s has no master broker", topic)
		}
	}
	v, err := a.QueryConsumeQueue(ctx, addr, topic, int32(q), index, int32(count), e.str("g"))
	if err != nil {
		return nil, nil, err
	}
	return v, text(func(b *strings.Builder) {
		if len(v.SubscriptionData) > 0 && string(v.SubscriptionData) != "null" {
			var pretty strings.Builder
			var x any
			if json.Unmarshal(v.SubscriptionData, &x) == nil {
				enc := json.NewEncoder(&pretty)
				enc.SetIndent("", "\t")
				_ = enc.Encode(x)
			}
			fmt.Fprintf(b, "Subscription data: \n%s\n", strings.TrimSuffix(pretty.String(), "\n"))
			b.WriteString("======================================\n")
		}
		if v.FilterData != nil {
			fmt.Fprintf(b, "Filter data: \n%s\n", *v.FilterData)
			b.WriteString("======================================\n")
		}
		fmt.Fprintf(b, "Queue data: \nmax: %d, min: %d\n", v.MaxQueueIndex, v.MinQueueIndex)
		b.WriteString("======================================\n")
		str := func(p *string) string {
			if p == nil {
				return "null"
			}
			return *p
		}
		for i, u := range v.QueueData {
			fmt.Fprintf(b, "idx: %d\n", index+int64(i))
			fmt.Fprintf(b, "ConsumeQueueData{physicOffset=%d, physicSize=%d, tagsCode=%d, extendDataJson='%s', bitMap='%s', eval=%t, msg='%s'}\n",
				u.PhysicOffset, u.PhysicSize, u.TagsCode, str(u.ExtendDataJSON), str(u.BitMap), u.Eval, str(u.Msg))
			b.WriteString("======================================\n")
		}
	}), nil
}

func topicClusterList(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	clusters, err := a.TopicClusters(ctx, e.str("t"))
	if err != nil {
		return nil, nil, err
	}
	return clusters, text(func(b *strings.Builder) {
		for _, c := range clusters {
			fmt.Fprintf(b, "%s\n", c)
		}
	}), nil
}

type statsRow struct {
	Topic        string  `json:"topic"`
	Group        string  `json:"group,omitempty"`
	Accumulation int64   `json:"accumulation"`
	InTPS        float64 `json:"inTps"`
	OutTPS       float64 `json:"outTps"`
	InMsg24Hour  int64   `json:"inMsg24Hour"`
	OutMsg24Hour int64   `json:"outMsg24Hour"`
}

// statsAll is RocketMQ's statsAll: per topic (retry and DLQ topics left out) and consuming
// group, the backlog, the put and get rates of the last minute and the last day's counts,
// summed over the topic's masters. As RocketMQ, a topic or group whose figures cannot be had
// is printed without them, and a topic that fails altogether is skipped.
func statsAll(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, topics, err := adminAndTopics(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	active, only := e.has("a"), e.str("t")
	rows := []statsRow{}
	for _, topic := range topics {
		if strings.HasPrefix(topic, names.RetryPrefix) || strings.HasPrefix(topic, names.DLQPrefix) || (only != "" && topic != only) {
			continue
		}
		r, err := a.TopicRoute(ctx, topic)
		if err != nil {
			continue
		}
		var masters []string
		for _, bd := range r.BrokerDatas {
			if addr := bd.MasterAddr(); addr != "" {
				masters = append(masters, addr)
			}
		}
		in := statsRow{Topic: topic}
		for _, m := range masters {
			if d, err := a.ViewBrokerStatsData(ctx, m, admin.StatsTopicPutNums, topic); err == nil {
				in.InTPS += d.Minute.TPS
				in.InMsg24Hour += d.Sum24Hours()
			}
		}
		groups, _ := a.TopicConsumedBy(ctx, topic)
		if len(groups) == 0 {
			if !active || in.InMsg24Hour > 0 {
				rows = append(rows, in)
			}
			continue
		}
		for _, g := range groups {
			row := in
			row.Group = g
			for _, m := range masters {
				if d, err := a.ViewBrokerStatsData(ctx, m, admin.StatsGroupGetNums, topic+"@"+g); err == nil {
					row.OutTPS += d.Minute.TPS
					row.OutMsg24Hour += d.Sum24Hours()
				}
			}
			if cs, err := a.ConsumeStats(ctx, g, topic); err == nil {
				row.Accumulation = max(0, cs.Diff())
			}
			if !active || row.InMsg24Hour > 0 || row.OutMsg24Hour > 0 {
				rows = append(rows, row)
			}
		}
	}
	return rows, text(func(b *strings.Builder) {
		fmt.Fprintf(b, "%-64s  %-64s %12s %11s %11s %14s %14s\n", "#Topic", "#Consumer Group", "#Accumulation",
			"#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
		for _, r := range rows {
			if r.Group == "" {
				fmt.Fprintf(b, "%-64s  %-64s %12d %11.2f %11s %14d %14s\n", front(r.Topic, 64), "", 0, r.InTPS, "",
					r.InMsg24Hour, "NO_CONSUMER")
				continue
			}
			fmt.Fprintf(b, "%-64s  %-64s %12d %11.2f %11.2f %14d %14d\n", front(r.Topic, 64), front(r.Group, 64),
				r.Accumulation, r.InTPS, r.OutTPS, r.InMsg24Hour, r.OutMsg24Hour)
		}
	}), nil
}
