// Package acltest is the ACL the module's security tests share, so that the official client
// (interop/) and our own clients meet the same accounts: an admin, an account that may
// publish and subscribe Topic only, and one that may only subscribe it.
package acltest

import (
	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/remoting"
)

// Topic is the one topic the non-admin accounts have permissions on.
const Topic = "AclTopic"

// The accounts of Config.
var (
	Admin   = remoting.Credentials{AccessKey: "admin-ak", SecretKey: "admin-secret"}
	RW      = remoting.Credentials{AccessKey: "rw-user", SecretKey: "rw-secret"}
	SubOnly = remoting.Credentials{AccessKey: "sub-user", SecretKey: "sub-secret"}
)

// Config is a fresh ACL of the three accounts: Admin may do anything, RW may publish and
// subscribe Topic and subscribe as any group, SubOnly may subscribe Topic only.
func Config() *acl.Config {
	return &acl.Config{Accounts: []acl.Account{
		{AccessKey: Admin.AccessKey, SecretKey: Admin.SecretKey, Admin: true,
			DefaultTopicPerm: "PUB|SUB", DefaultGroupPerm: "PUB|SUB"},
		{AccessKey: RW.AccessKey, SecretKey: RW.SecretKey, DefaultTopicPerm: "DENY",
			DefaultGroupPerm: "SUB", TopicPerms: []string{Topic + "=PUB|SUB"}},
		{AccessKey: SubOnly.AccessKey, SecretKey: SubOnly.SecretKey, DefaultTopicPerm: "DENY",
			DefaultGroupPerm: "SUB", TopicPerms: []string{Topic + "=SUB"}},
	}}
}
