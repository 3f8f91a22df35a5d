package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
)

// The plain ACL's administration: RocketMQ 4.9's updateAclConfig, deleteAclConfig,
// clusterAclConfigVersion, updateGlobalWhiteAddr and RocketMQ 5's getAclConfig. With ACL on
// they need an admin account (-ak, -sk). A change reaches the whole node the broker runs in,
// and is written to the ACL file it watches.

func init() {
	bc := func(what string) []option {
		return []option{{short: "b", long: "brokerAddr", usage: what + " which broker"},
			{short: "c", long: "clusterName", usage: what + " which cluster"}}
	}
	commands = append(commands,
		command{name: "updateAclConfig", desc: "Update acl config yaml file in broker", exec: updateAclConfig,
			options: append(bc("update acl config file to"),
				option{short: "a", long: "accessKey", usage: "set accessKey in acl config file", required: true},
				option{short: "s", long: "secretKey", usage: "set secretKey in acl config file", required: true},
				option{short: "w", long: "whiteRemoteAddress", usage: "set white ip Address for account in acl config file"},
				option{short: "i", long: "defaultTopicPerm", usage: "set default topicPerm in acl config file"},
				option{short: "u", long: "defaultGroupPerm", usage: "set default GroupPerm in acl config file"},
				option{short: "t", long: "topicPerms", usage: "set topicPerms list,eg: topicA=DENY,topicD=SUB"},
				option{short: "g", long: "groupPerms", usage: "set groupPerms list,eg: groupD=DENY,groupD=SUB"},
				option{short: "m", long: "admin", usage: "set admin flag in acl config file (true|false; left out is false, as in RocketMQ: an update without it takes admin away)"}),
			check: oneOf("b", "c")},
		command{name: "deleteAclConfig", desc: "Delete Acl Config Account in broker", exec: deleteAclConfig,
			options: append(bc("delete acl config account from"),
				option{short: "a", long: "accessKey", usage: "set accessKey in acl config file for deleting which account", required: true}),
			check: oneOf("b", "c")},
		command{name: "clusterAclConfigVersion", desc: "List all of acl config version information in cluster", exec: clusterAclConfigVersion,
			options: bc("query acl config version for"), check: oneOf("b", "c")},
		command{name: "updateGlobalWhiteAddr", desc: "Update global white address for acl Config File in broker", exec: updateGlobalWhiteAddr,
			options: append(bc("update global white address to"),
				option{short: "g", long: "globalWhiteRemoteAddresses", usage: "set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*", required: true},
				option{short: "p", long: "aclFileFullPath", usage: "update global white address of specified acl file (the broker's own)"}),
			check: oneOf("b", "c")},
		command{name: "getAclConfig", desc: "List all of acl config information in cluster.", exec: getAclConfig,
			options: bc("query acl config of"), check: oneOf("b", "c")},
	)
}

// aclTargets are the brokers an ACL change goes to: -b, or every broker (masters and slaves,
// each keeps its own ACL) of -c.
func aclTargets(ctx context.Context, e *env, a *admin.Admin) ([]string, error) {
	if addr := e.str("b"); addr != "" {
		return []string{addr}, nil
	}
	return a.ClusterBrokers(ctx, e.str("c"))
}

// onEachBroker runs op on every address in turn, stopping at the first failure; done lists
// the addresses it succeeded on.
func onEachBroker(addrs []string, op func(addr string) error) (done []string, err error) {
	for _, addr := range addrs {
		if err := op(addr); err != nil {
			return done, err
		}
		done = append(done, addr)
	}
	return done, nil
}

// javaList prints a list as Java's List.toString ("null" for none).
func javaList(l []string) string {
	if l == nil {
		return "null"
	}
	return "[" + strings.Join(l, ", ") + "]"
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

func updateAclConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	adminFlag, err := e.bool("m", false)
	if err != nil {
		return nil, nil, err
	}
	acc := admin.ACLAccount{AccessKey: e.str("a"), SecretKey: e.str("s"), Admin: adminFlag,
		DefaultTopicPerm: e.str("i"), DefaultGroupPerm: e.str("u")}
	if e.has("w") {
		acc.WhiteRemoteAddress, acc.SetWhiteRemoteAddress = e.str("w"), true
	}
	if e.has("t") {
		acc.TopicPerms = strings.Split(e.str("t"), ",")
	}
	if e.has("g") {
		acc.GroupPerms = strings.Split(e.str("g"), ",")
	}
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	addrs, err := aclTargets(ctx, e, a)
	if err != nil {
		return nil, nil, err
	}
	done, err := onEachBroker(addrs, func(addr string) error { return a.UpdateACLAccount(ctx, addr, acc) })
	white := "null"
	if acc.SetWhiteRemoteAddress {
		white = acc.WhiteRemoteAddress
	}
	// RocketMQ 5's PlainAccessConfig.toString, which leaves the secret out.
	summary := fmt.Sprintf("PlainAccessConfig{accessKey='%s', whiteRemoteAddress='%s', admin=%t, defaultTopicPerm='%s', defaultGroupPerm='%s', topicPerms=%s, groupPerms=%s}\n",
		acc.AccessKey, white, acc.Admin, orNull(acc.DefaultTopicPerm), orNull(acc.DefaultGroupPerm), javaList(acc.TopicPerms), javaList(acc.GroupPerms))
	out := text(func(b *strings.Builder) {
		for _, addr := range done {
			fmt.Fprintf(b, "create or update plain access config to %s success.\n", addr)
		}
		if err == nil {
			b.WriteString(summary)
		}
	})
	if err != nil {
		return nil, out, err
	}
	return map[string]any{"brokers": done, "accessKey": acc.AccessKey}, out, nil
}

func deleteAclConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	addrs, err := aclTargets(ctx, e, a)
	if err != nil {
		return nil, nil, err
	}
	ak := e.str("a")
	done, err := onEachBroker(addrs, func(addr string) error { return a.DeleteACLAccount(ctx, addr, ak) })
	out := text(func(b *strings.Builder) {
		for _, addr := range done {
			fmt.Fprintf(b, "delete plain access config account from %s success.\n", addr)
		}
		if err == nil {
			fmt.Fprintf(b, "account's accesskey is:%s\n", ak)
		}
	})
	if err != nil {
		return nil, out, err
	}
	return map[string]any{"brokers": done, "accessKey": ak}, out, nil
}

func updateGlobalWhiteAddr(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	addrs, err := aclTargets(ctx, e, a)
	if err != nil {
		return nil, nil, err
	}
	var white []string
	for w := range strings.SplitSeq(e.str("g"), ",") {
		if w = strings.TrimSpace(w); w != "" {
			white = append(white, w)
		}
	}
	done, err := onEachBroker(addrs, func(addr string) error { return a.UpdateGlobalWhiteAddrs(ctx, addr, white, e.str("p")) })
	out := text(func(b *strings.Builder) {
		for _, addr := range done {
			fmt.Fprintf(b, "update global white remote addresses to %s success.\n", addr)
		}
	})
	if err != nil {
		return nil, out, err
	}
	return map[string]any{"brokers": done, "globalWhiteRemoteAddresses": white}, out, nil
}

// clusterAclConfigVersion is RocketMQ's clusterAclConfigVersion: -b's ACL version, or every
// master's of -c under a header, a row per ACL file.
func clusterAclConfigVersion(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	addrs, err := targets(ctx, e, a)
	if err != nil {
		return nil, nil, err
	}
	var versions []*admin.ACLVersion
	for _, addr := range addrs {
		v, err := a.ACLVersionOf(ctx, addr)
		if err != nil {
			return nil, nil, err
		}
		versions = append(versions, v)
	}
	const format = "%-16s  %-22s  %-22s  %-20s  %-22s  %-22s\n"
	return versions, text(func(b *strings.Builder) {
		if e.has("c") {
			fmt.Fprintf(b, format, "#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath", "#AclConfigVersionNum", "#AclLastUpdateTime")
		}
		for _, v := range versions {
			for _, file := range slices.Sorted(maps.Keys(v.Files)) {
				dv := v.Files[file]
				fmt.Fprintf(b, format, v.ClusterName, v.BrokerName, v.BrokerAddr, file, strconv.FormatInt(dv.Counter, 10),
					time.UnixMilli(dv.Timestamp).Local().Format(time.DateTime))
			}
		}
		if e.has("c") {
			b.WriteString("get cluster's plain access config version success.\n")
			return
		}
		b.WriteString("get broker's plain access config version success.\n")
	}), nil
}

// getAclConfig is RocketMQ 5's getAclConfig: each broker's global white addresses and every
// account's fields, its secret key among them (as RocketMQ prints them).
func getAclConfig(ctx context.Context, e *env) (any, func(io.Writer), error) {
	a, err := e.adminClient()
	if err != nil {
		return nil, nil, err
	}
	addrs, err := targets(ctx, e, a)
	if err != nil {
		return nil, nil, err
	}
	var cfgs []*admin.ACLConfig
	for _, addr := range addrs {
		c, err := a.ACLConfigOf(ctx, addr)
		if err != nil {
			return nil, nil, err
		}
		cfgs = append(cfgs, c)
	}
	return cfgs, text(func(b *strings.Builder) {
		for _, c := range cfgs {
			fmt.Fprintf(b, "\n%-20s: %s\n\naccounts:\n", "globalWhiteRemoteAddresses", javaList(c.GlobalWhiteAddrs))
			for _, acc := range c.PlainAccessConfigs {
				field := func(name, v string) { fmt.Fprintf(b, "%-1s %-18s: %s\n", "", name, v) }
				field("accessKey", acc.AccessKey)
				field("secretKey", acc.SecretKey)
				field("whiteRemoteAddress", acc.WhiteRemoteAddress)
				field("admin", strconv.FormatBool(acc.Admin))
				field("defaultTopicPerm", acc.DefaultTopicPerm)
				field("defaultGroupPerm", acc.DefaultGroupPerm)
				field("topicPerms", javaList(acc.TopicPerms))
				field("groupPerms", javaList(acc.GroupPerms))
				b.WriteString("\n")
			}
		}
	}), nil
}
