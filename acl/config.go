package acl

// Config is RocketMQ's plain_acl.yml.
type Config struct {
	GlobalWhiteRemoteAddresses []string  `yaml:"globalWhiteRemoteAddresses"`
	Accounts                   []Account `yaml:"accounts"`
}

// Account is one entry of plain_acl.yml's accounts: who signs (AccessKey, SecretKey), from
// where it needs no signature (WhiteRemoteAddress), and what it may do. Perms are "DENY",
// "PUB", "SUB", "PUB|SUB" or "SUB|PUB"; an empty default perm is DENY, as in RocketMQ.
// TopicPerms and GroupPerms items are "name=PERM".
type Account struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm"`
	TopicPerms         []string `yaml:"topicPerms"`
	GroupPerms         []string `yaml:"groupPerms"`
}
