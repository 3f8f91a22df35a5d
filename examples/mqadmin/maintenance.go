package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/route"
)

// A topic's permission and the brokers' clean-ups: RocketMQ 4.9's updateTopicPerm,
// cleanUnusedTopic and deleteExpiredCommitLog.

func init() {
	commands = append(commands,
		command{name: "updateTopicPerm", desc: "Update topic perm", exec: updateTopicPerm,
			options: []option{{short: "b", long: "brokerAddr", usage: "create topic to which broker"},
				{short: "c", long: "clusterName", usage: "create topic to which cluster"},
				{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "p", long: "perm", usage: "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]", required: true}},
			check: oneOf("b", "c")},
		command{name: "cleanUnusedTopic", desc: "Clean unused topic on broker.", exec: onBrokers("cleanUnusedTopic",
			func(a *admin.Admin) func(context.Context, string) error { return a.CleanUnusedTopic }),
			options: []option{{short: "b", long: "brokerAddr", usage: "Broker address"},
				{short: "c", long: "cluster", usage: "cluster name"}}},
		command{name: "deleteExpiredCommitLog", desc: "Delete expired CommitLog files", exec: onBrokers("deleteExpiredCommitLog",
			func(a *admin.Admin) func(context.Context, string) error { return a.DeleteExpiredCommitLog }),
			options: []option{{short: "b", long: "brokerAddr", usage: "Broker address"},
				{short: "c", long: "cluster", usage: "clustername"}}},
	)
}

type permRow struct {
	Addr    string `json:"brokerAddr"`
	OldPerm int32  `json:"oldPerm"`
	NewPerm int32  `json:"newPerm"`
}

// updateTopicPerm is RocketMQ's updateTopicPerm: the topic is updated on the master -b names,
// or on every master of -c, with the queue counts of its route's first queue data and the new
// permission.
func updateTopicPerm(ctx context.Context, e *env) (any, func(io.Writer), error) {
	perm, err := e.int("p", 0)
	if err != nil {
		return nil, nil, err
	}
	if perm != int64(route.PermWrite) && perm != int64(route.PermRead) && perm != int64(route.PermReadWrite) {
		return nil, nil, usageErrorf("-p: permission %d, want 2 (W), 4 (R) or 6 (RW)", perm)
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
	if len(r.QueueDatas) == 0 {
		return nil, nil, fmt.Errorf("topic %s has no queue data in its route", topic)
	}
	first := r.QueueDatas[0]
	cfg := admin.TopicConfig{Topic: topic, ReadQueueNums: int(first.ReadQueueNums), WriteQueueNums: int(first.WriteQueueNums),
		Perm: int(perm)}
	configLine := fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=SINGLE_TAG, topicSysFlag=%d, order=false, attributes={}].\n",
		topic, cfg.ReadQueueNums, cfg.WriteQueueNums, route.PermString(int32(perm)), first.TopicSynFlag)
	if addr := e.str("b"); addr != "" {
		var brokerName string
		for _, bd := range r.BrokerDatas {
			if bd.MasterAddr() == addr {
				brokerName = bd.BrokerName
			}
		}
		if brokerName == "" {
			return nil, nil, errors.New("updateTopicPerm error broker not exit or broker is not master") // RocketMQ's words, less the "!"
		}
		var old int32
		for _, qd := range r.QueueDatas {
			if qd.BrokerName == brokerName {
				old = qd.Perm
				break
			}
		}
		if int64(old) == perm {
			return []permRow{}, text(func(b *strings.Builder) { b.WriteString("new perm equals to the old one!\n") }), nil
		}
		if err := a.CreateTopic(ctx, addr, cfg); err != nil {
			return nil, nil, err
		}
		rows := []permRow{{Addr: addr, OldPerm: old, NewPerm: int32(perm)}}
		return rows, text(func(b *strings.Builder) {
			fmt.Fprintf(b, "update topic perm from %d to %d in %s success.\n", old, perm, addr)
			b.WriteString(configLine)
		}), nil
	}
	addrs, err := targets(ctx, e, a)
	if err != nil {
		return nil, nil, err
	}
	var rows []permRow
	out := func() func(io.Writer) {
		return text(func(b *strings.Builder) {
			for _, r := range rows {
				fmt.Fprintf(b, "update topic perm from %d to %d in %s success.\n", r.OldPerm, r.NewPerm, r.Addr)
			}
		})
	}
	for _, addr := range addrs {
		if err := a.CreateTopic(ctx, addr, cfg); err != nil {
			return nil, out(), err
		}
		// As RocketMQ, the old permission printed is the first queue data's.
		rows = append(rows, permRow{Addr: addr, OldPerm: first.Perm, NewPerm: int32(perm)})
	}
	return rows, out(), nil
}

// onBrokers is a clean-up on the broker -b, or every broker (masters and slaves) of cluster
// -c, or of every cluster: RocketMQ prints "success" when the brokers accepted it, "false" when
// one did not (the command then fails).
func onBrokers(name string, op func(*admin.Admin) func(context.Context, string) error) func(context.Context, *env) (any, func(io.Writer), error) {
	return func(ctx context.Context, e *env) (any, func(io.Writer), error) {
		a, err := e.adminClient()
		if err != nil {
			return nil, nil, err
		}
		addrs := []string{e.str("b")}
		if addrs[0] == "" {
			if addrs, err = a.ClusterBrokers(ctx, e.str("c")); err != nil {
				return nil, nil, err
			}
		}
		do := op(a)
		var firstErr error
		for _, addr := range addrs {
			if err := do(ctx, addr); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		ok := firstErr == nil
		out := text(func(b *strings.Builder) {
			if ok {
				b.WriteString("success\n")
				return
			}
			b.WriteString(strconv.FormatBool(ok) + "\n")
		})
		if firstErr != nil {
			return nil, out, fmt.Errorf("%s: %w", name, firstErr)
		}
		return map[string]any{"brokers": addrs, "result": ok}, out, nil
	}
}
