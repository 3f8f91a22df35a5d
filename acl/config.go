package acl

// Config is RocketMQ's plain_acl.yml.
type Config struct {
	GlobalWhiteRemoteAddresses []string  `yaml:"globalWhiteRemoteAddresses" json:"globalWhiteRemoteAddresses"`
	Accounts                   []Account `yaml:"accounts" json:"accounts"`
}

// Account is one entry of plain_acl.yml's accounts: who signs (AccessKey, SecretKey), from
// where it needs no signature (WhiteRemoteAddress), and what it may do. Perms are "DENY",
// "PUB", "SUB", "PUB|SUB" or "SUB|PUB"; an empty default perm is DENY, as in RocketMQ.
// TopicPerms and GroupPerms items are "name=PERM". The JSON names are those of RocketMQ's
// PlainAccessConfig, as GET_BROKER_CLUSTER_ACL_CONFIG answers an account.
type Account struct {
	AccessKey          string   `yaml:"accessKey" json:"accessKey"`
	SecretKey          string   `yaml:"secretKey" json:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress" json:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin" json:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm" json:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm" json:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms" json:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms" json:"groupPerms"`
}
