// Package acl holds the configuration of RocketMQ 4.x's plain ACL, as plain_acl.yml writes it:
// the globally white-listed addresses and the accounts, each with its keys, the address it may
// skip signing from, whether it is an admin, and its permissions. mq.Options.Security.ACL takes
// a Config built in Go; package github.com/mqgo/mq/aclfile reads one from YAML (a separate
// package, so that an application that writes its accounts in Go links no YAML parser). The
// node checks requests against it (internal/acl).
package acl
