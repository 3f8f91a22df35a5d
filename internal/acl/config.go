package acl

import pub "github.com/mqgo/mq/acl"

// The configuration types and readers live in the public package acl, where mq.Options can
// name them; the checking stays here.
type (
	Config  = pub.Config
	Account = pub.Account
)

// Parse reads a plain_acl.yml (acl.Parse).
func Parse(data []byte) (*Config, error) { return pub.Parse(data) }

// LoadFile reads a plain_acl.yml file (acl.LoadFile).
func LoadFile(path string) (*Config, error) { return pub.LoadFile(path) }
