// Package acl holds the configuration of RocketMQ 4.x's plain ACL, as plain_acl.yml writes it:
// the globally white-listed addresses and the accounts, each with its keys, the address it may
// skip signing from, whether it is an admin, and its permissions. mq.Options.ACL takes a
// Config; Parse and LoadFile read one from YAML. The node checks requests against it
// (internal/acl).
package acl
