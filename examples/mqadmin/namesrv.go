package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mqgo/mq/admin"
)

// The name servers' KV configuration: RocketMQ 4.9's updateKvConfig, deleteKvConfig and
// updateOrderConf (the ORDER_TOPIC_CONFIG namespace). Writes go to every name server of -n.

func init() {
	commands = append(commands,
		command{name: "updateKvConfig", desc: "Create or update KV config.", exec: updateKvConfig,
			options: []option{{short: "s", long: "namespace", usage: "set the namespace", required: true},
				{short: "k", long: "key", usage: "set the key name", required: true},
				{short: "v", long: "value", usage: "set the key value", required: true}}},
		command{name: "deleteKvConfig", desc: "Delete KV config.", exec: deleteKvConfig,
			options: []option{{short: "s", long: "namespace", usage: "set the namespace", required: true},
				{short: "k", long: "key", usage: "set the key name", required: true}}},
		command{name: "updateOrderConf", desc: "Create or update or delete order conf", exec: updateOrderConf,
			options: []option{{short: "t", long: "topic", usage: "topic name", required: true},
				{short: "v", long: "orderConf", usage: "set order conf [eg. brokerName1:num;brokerName2:num]"},
				{short: "m", long: "method", usage: "option type [eg. put|get|delete", required: true}},
			check: func(e *env) error {
				switch e.str("m") {
				case "put":
					if e.str("v") == "" {
						return usageErrorf("please set orderConf with option -v.")
					}
				case "get", "delete":
				default:
					return usageErrorf("-m: %q, want put, get or delete", e.str("m"))
				}
				return nil
			}},
	)
}

func updateKvConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	ns, k, v := e.str("s"), e.str("k"), e.str("v")
	if err := a.PutKVConfig(ctx, ns, k, v); err != nil {
		return nil, nil, err
	}
	return map[string]string{"namespace": ns, "key": k, "value": v}, text(func(b *strings.Builder) {
		b.WriteString("create or update kv config to namespace success.\n")
	}), nil
}

func deleteKvConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	ns, k := e.str("s"), e.str("k")
	if err := a.DeleteKVConfig(ctx, ns, k); err != nil {
		return nil, nil, err
	}
	return map[string]string{"namespace": ns, "key": k}, text(func(b *strings.Builder) {
		b.WriteString("delete kv config from namespace success.\n")
	}), nil
}

// updateOrderConf is RocketMQ's updateOrderConf: an order topic's queue layout on the name
// servers, which routes carry to producers (orderTopicConf).
func updateOrderConf(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	topic, conf := e.str("t"), e.str("v")
	var line string
	switch e.str("m") {
	case "get":
		if conf, err = a.GetKVConfig(ctx, admin.NamespaceOrderTopicConfig, topic); err != nil {
			return nil, nil, err
		}
		line = fmt.Sprintf("get orderConf success. topic=[%s], orderConf=[%s] \n", topic, conf)
	case "put":
		if err := a.PutKVConfig(ctx, admin.NamespaceOrderTopicConfig, topic, conf); err != nil {
			return nil, nil, err
		}
		line = fmt.Sprintf("update orderConf success. topic=[%s], orderConf=[%s]\n", topic, conf)
	case "delete":
		if err := a.DeleteKVConfig(ctx, admin.NamespaceOrderTopicConfig, topic); err != nil {
			return nil, nil, err
		}
		conf = ""
		line = fmt.Sprintf("delete orderConf success. topic=[%s]\n", topic)
	}
	return map[string]string{"topic": topic, "orderConf": conf}, text(func(b *strings.Builder) { b.WriteString(line) }), nil
}
