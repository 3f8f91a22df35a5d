package aclfile

import (
	"fmt"

	"github.com/mqgo/mq/acl"
	"go.yaml.in/yaml/v3"
)

// Format writes cfg as plain_acl.yml content that Parse reads back the same: what a node
// writes when an operator changes its ACL over the wire (RocketMQ's mqadmin updateAclConfig,
// deleteAclConfig, updateGlobalWhiteAddr), as RocketMQ's broker rewrites its file. Comments
// and keys RocketMQ does not read are not kept, as RocketMQ's rewrite does not keep them.
func Format(cfg *acl.Config) ([]byte, error) {
	if cfg == nil {
		return nil, fmt.Errorf("acl: no config")
	}
	out := *cfg
	if out.GlobalWhiteRemoteAddresses == nil {
		out.GlobalWhiteRemoteAddresses = []string{}
	}
	if out.Accounts == nil {
		out.Accounts = []acl.Account{}
	}
	data, err := yaml.Marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	return data, nil
}

// Format lets the node write the file it watches (internal/node's ACL administration).
func (file) Format(cfg *acl.Config) ([]byte, error) { return Format(cfg) }
