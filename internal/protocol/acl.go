package protocol

import "github.com/mqgo/mq/acl"

// The plain ACL's administration (RocketMQ 4.9's AdminBrokerProcessor: mqadmin updateAclConfig,
// deleteAclConfig, clusterAclConfigVersion, updateGlobalWhiteAddr; RocketMQ 5's getAclConfig).

// CreateAccessConfigRequestHeader is the header of UPDATE_AND_CREATE_ACL_CONFIG (50): an account
// to create, or to update where it exists. A field left out keeps the account's value; topicPerms
// and groupPerms are comma-separated "name=PERM" items.
type CreateAccessConfigRequestHeader struct {
	AccessKey          string `ext:"accessKey,required"`
	SecretKey          string `ext:"secretKey,omitempty"`
	WhiteRemoteAddress string `ext:"whiteRemoteAddress,omitempty"`
	Admin              bool   `ext:"admin"`
	DefaultTopicPerm   string `ext:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string `ext:"defaultGroupPerm,omitempty"`
	TopicPerms         string `ext:"topicPerms,omitempty"`
	GroupPerms         string `ext:"groupPerms,omitempty"`
}

// DeleteAccessConfigRequestHeader is the header of DELETE_ACL_CONFIG (51).
type DeleteAccessConfigRequestHeader struct {
	AccessKey string `ext:"accessKey,required"`
}

// UpdateGlobalWhiteAddrsConfigRequestHeader is the header of UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
// (53): the comma-separated addresses that need no signature, and the ACL file to write them to
// (RocketMQ's brokers may have several; empty means the broker's own).
type UpdateGlobalWhiteAddrsConfigRequestHeader struct {
	GlobalWhiteAddrs string `ext:"globalWhiteAddrs,required"`
	AclFileFullPath  string `ext:"aclFileFullPath,omitempty"`
}

// GetBrokerAclConfigResponseHeader answers GET_BROKER_CLUSTER_ACL_INFO (52): the ACL's
// DataVersion as JSON, and each ACL file's, a JSON object by path.
type GetBrokerAclConfigResponseHeader struct {
	Version           string `ext:"version,required"`
	AllAclFileVersion string `ext:"allAclFileVersion,omitempty"`
	BrokerName        string `ext:"brokerName,required"`
	BrokerAddr        string `ext:"brokerAddr,required"`
	ClusterName       string `ext:"clusterName,required"`
}

// PlainAccessConfig is one account in GET_BROKER_CLUSTER_ACL_CONFIG's body (RocketMQ's
// PlainAccessConfig): the public acl.Account, whose JSON names are RocketMQ's.
type PlainAccessConfig = acl.Account

// AclConfigBody is the body answering GET_BROKER_CLUSTER_ACL_CONFIG (54), RocketMQ 5's
// GetBrokerClusterAclConfigResponseBody.
type AclConfigBody struct {
	GlobalWhiteAddrs   []string            `json:"globalWhiteAddrs"`
	PlainAccessConfigs []PlainAccessConfig `json:"plainAccessConfigs"`
}
