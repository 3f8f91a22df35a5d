package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The plain ACL's administration on one broker (RocketMQ 4.9's mqadmin updateAclConfig,
// deleteAclConfig, clusterAclConfigVersion, updateGlobalWhiteAddr and 5's getAclConfig). With
// ACL on, each needs an admin account's credentials (Options.Credentials).

// ACLAccount is an account to create or update with UpdateACLAccount (RocketMQ's
// PlainAccessConfig). An empty SecretKey, DefaultTopicPerm or DefaultGroupPerm, and nil
// TopicPerms or GroupPerms, keep the account's; Admin is always set. WhiteRemoteAddress is
// set when SetWhiteRemoteAddress is.
type ACLAccount struct {
	AccessKey             string
	SecretKey             string
	WhiteRemoteAddress    string
	SetWhiteRemoteAddress bool
	Admin                 bool
	DefaultTopicPerm      string
	DefaultGroupPerm      string
	TopicPerms            []string // "name=PERM"
	GroupPerms            []string
}

// RocketMQ's answers refusing an ACL change: UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
// DELETE_ACL_CONFIG_FAILED, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED.
const (
	aclUpdateFailed      = 209
	aclGlobalWhiteFailed = 211
)

// aclError makes a broker's refusal of an ACL request read as one: RocketMQ answers its own
// codes (209 to 211, which RocketMQ 5 also gives POP answers) with a remark saying what failed.
func aclError(what, addr string, err error) error {
	var re *remoting.ResponseError
	if errors.As(err, &re) && re.Code >= aclUpdateFailed && re.Code <= aclGlobalWhiteFailed {
		return fmt.Errorf("admin: %s on broker %s refused (code %d): %s", what, addr, re.Code, re.Remark)
	}
	return fmt.Errorf("admin: %s on broker %s: %w", what, addr, err)
}

// UpdateACLAccount creates the account on one broker, or updates it where its access key
// exists (UPDATE_AND_CREATE_ACL_CONFIG).
func (a *Admin) UpdateACLAccount(ctx context.Context, brokerAddr string, acc ACLAccount) error {
	ext := remoting.EncodeHeader(&protocol.CreateAccessConfigRequestHeader{AccessKey: acc.AccessKey, SecretKey: acc.SecretKey,
		Admin: acc.Admin, DefaultTopicPerm: acc.DefaultTopicPerm, DefaultGroupPerm: acc.DefaultGroupPerm})
	if acc.SetWhiteRemoteAddress {
		ext["whiteRemoteAddress"] = acc.WhiteRemoteAddress
	}
	if acc.TopicPerms != nil {
		ext["topicPerms"] = strings.Join(acc.TopicPerms, ",")
	}
	if acc.GroupPerms != nil {
		ext["groupPerms"] = strings.Join(acc.GroupPerms, ",")
	}
	if _, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.UpdateAndCreateACLConfig, ext, nil)); err != nil {
		return aclError("update ACL account "+acc.AccessKey, brokerAddr, err)
	}
	return nil
}

// DeleteACLAccount deletes an account from one broker (DELETE_ACL_CONFIG).
func (a *Admin) DeleteACLAccount(ctx context.Context, brokerAddr, accessKey string) error {
	req := remoting.NewRequest(remoting.DeleteACLConfig, remoting.EncodeHeader(&protocol.DeleteAccessConfigRequestHeader{AccessKey: accessKey}), nil)
	if _, err := a.invokeOK(ctx, brokerAddr, req); err != nil {
		return aclError("delete ACL account "+accessKey, brokerAddr, err)
	}
	return nil
}

// UpdateGlobalWhiteAddrs replaces one broker's global white addresses
// (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG); file, when not empty, must be the broker's ACL file.
func (a *Admin) UpdateGlobalWhiteAddrs(ctx context.Context, brokerAddr string, addrs []string, file string) error {
	req := remoting.NewRequest(remoting.UpdateGlobalWhiteAddrsConfig, remoting.EncodeHeader(
		&protocol.UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: strings.Join(addrs, ","), AclFileFullPath: file}), nil)
	if _, err := a.invokeOK(ctx, brokerAddr, req); err != nil {
		return aclError("update ACL global white addresses", brokerAddr, err)
	}
	return nil
}

// ACLVersion is a broker's ACL data version (RocketMQ's ClusterAclVersionInfo).
type ACLVersion struct {
	ClusterName, BrokerName, BrokerAddr string
	Counter                             int64
	Updated                             time.Time
	// Files are the version of each ACL file by path (mq's brokers have one, or
	// "Options.Security.ACL" for an ACL kept in memory).
	Files map[string]route.DataVersion
}

// ACLVersionOf reads one broker's ACL data version (GET_BROKER_CLUSTER_ACL_INFO).
func (a *Admin) ACLVersionOf(ctx context.Context, brokerAddr string) (*ACLVersion, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.GetBrokerClusterACLInfo, nil, nil))
	if err != nil {
		return nil, aclError("ACL version", brokerAddr, err)
	}
	var h protocol.GetBrokerAclConfigResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("admin: ACL version of %s: %w", brokerAddr, err)
	}
	var dv route.DataVersion
	if err := json.Unmarshal([]byte(h.Version), &dv); err != nil {
		return nil, fmt.Errorf("admin: ACL version of %s: %w", brokerAddr, err)
	}
	v := &ACLVersion{ClusterName: h.ClusterName, BrokerName: h.BrokerName, BrokerAddr: h.BrokerAddr, Counter: dv.Counter,
		Updated: millisTime(dv.Timestamp), Files: map[string]route.DataVersion{}}
	if h.AllAclFileVersion != "" {
		if err := json.Unmarshal([]byte(h.AllAclFileVersion), &v.Files); err != nil {
			return nil, fmt.Errorf("admin: ACL file versions of %s: %w", brokerAddr, err)
		}
	}
	return v, nil
}

// ACLConfig is a broker's ACL: its global white addresses and every account, secret keys
// included (GET_BROKER_CLUSTER_ACL_CONFIG, RocketMQ 5's GetBrokerClusterAclConfigResponseBody;
// the JSON names are RocketMQ's).
type ACLConfig struct {
	GlobalWhiteAddrs   []string      `json:"globalWhiteAddrs"`
	PlainAccessConfigs []acl.Account `json:"plainAccessConfigs"`
}

// ACLConfigOf reads one broker's ACL.
func (a *Admin) ACLConfigOf(ctx context.Context, brokerAddr string) (*ACLConfig, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, remoting.NewRequest(remoting.GetBrokerClusterACLConfig, nil, nil))
	if err != nil {
		return nil, aclError("ACL config", brokerAddr, err)
	}
	var c ACLConfig
	if err := json.Unmarshal(resp.Body, &c); err != nil {
		return nil, fmt.Errorf("admin: ACL config of %s: %w", brokerAddr, err)
	}
	return &c, nil
}
