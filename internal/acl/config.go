package acl

import pub "github.com/mqgo/mq/acl"

// The configuration types live in the public package acl, where mq.Options can name them, and
// the YAML reader in package aclfile, which the node reaches through internal/addon.ACLFile;
// the checking stays here.
type (
	Config  = pub.Config
	Account = pub.Account
)
