package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/acl"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The plain ACL's administration, RocketMQ 4.9's UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
// GET_BROKER_CLUSTER_ACL_INFO, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG and RocketMQ 5's
// GET_BROKER_CLUSTER_ACL_CONFIG, over the node's ACL (Deps.ACL). The ACL is the node's, not
// the broker's: a change reaches every listener of the node at once, and is kept where the
// ACL comes from (the plain_acl.yml the node watches, rewritten whole as RocketMQ rewrites
// it, or only in memory for Options.Security.ACL). Every code needs an admin account when ACL
// is on (internal/acl's codes.go); with ACL off they answer that it is off: it cannot be
// turned on over the wire.

// ACLAdmin is the node's ACL as these codes read and change it.
type ACLAdmin interface {
	// Snapshot returns the ACL in effect, how many configurations have been put in effect and
	// when the last was, and the file it is kept in ("" for a configuration kept in memory).
	Snapshot() (cfg acl.Config, counter int64, at time.Time, file string)
	// Update applies change to a copy of the ACL in effect, checks the result as a loaded
	// file is checked, keeps it and puts it in effect; when change or a check fails nothing
	// changes.
	Update(change func(*acl.Config) error) error
}

// RocketMQ 4.9's response codes of the ACL administration (5.x reuses 209 and 210 for POP's
// POLLING_FULL and POLLING_TIMEOUT); the remark says what failed.
const (
	aclUpdateFailed            int32 = 209 // UPDATE_AND_CREATE_ACL_CONFIG_FAILED
	aclDeleteFailed            int32 = 210 // DELETE_ACL_CONFIG_FAILED
	aclGlobalWhiteUpdateFailed int32 = 211 // UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
)

// aclInMemory is what GET_BROKER_CLUSTER_ACL_INFO names as the file of an ACL kept in memory
// (Options.Security.ACL): one word, as mqadmin prints it in a column.
const aclInMemory = "Options.Security.ACL"

// aclOff answers a code of this file on a node without ACL.
func aclOff(code int32) *remoting.Command {
	return remoting.NewResponse(code, "ACL is off on this node: start it with an ACL (Options.Security.ACL or ACLFile, "+
		"mqnode -acl FILE) to administer it; it cannot be turned on over the wire")
}

// processUpdateACL handles UPDATE_AND_CREATE_ACL_CONFIG (50): the account is created, or
// updated where its access key exists, as RocketMQ's PlainPermissionManager.updateAccessConfig:
// a header field left out keeps the account's value (admin is always set), topicPerms and
// groupPerms replace the lists whole.
func (s *Service) processUpdateACL(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if s.deps.ACL == nil {
		return aclOff(aclUpdateFailed), nil
	}
	var h protocol.CreateAccessConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	has := func(field string) bool { _, ok := req.ExtFields[field]; return ok }
	created := false
	err := s.deps.ACL.Update(func(cfg *acl.Config) error {
		i := slices.IndexFunc(cfg.Accounts, func(a acl.Account) bool { return a.AccessKey == h.AccessKey })
		if i < 0 {
			if h.SecretKey == "" {
				return errors.New("a new account needs a secretKey")
			}
			cfg.Accounts = append(cfg.Accounts, acl.Account{AccessKey: h.AccessKey})
			i, created = len(cfg.Accounts)-1, true
		}
		a := &cfg.Accounts[i]
		if h.SecretKey != "" {
			a.SecretKey = h.SecretKey
		}
		if has("whiteRemoteAddress") {
			a.WhiteRemoteAddress = h.WhiteRemoteAddress
		}
		a.Admin = h.Admin
		if h.DefaultTopicPerm != "" {
			a.DefaultTopicPerm = h.DefaultTopicPerm
		}
		if h.DefaultGroupPerm != "" {
			a.DefaultGroupPerm = h.DefaultGroupPerm
		}
		if has("topicPerms") {
			a.TopicPerms = splitList(h.TopicPerms)
		}
		if has("groupPerms") {
			a.GroupPerms = splitList(h.GroupPerms)
		}
		return nil
	})
	if err != nil {
		return remoting.NewResponse(aclUpdateFailed, fmt.Sprintf("The accesskey[%s] corresponding to accessConfig has been updated failed: %v",
			h.AccessKey, err)), nil
	}
	s.log.Warn().Str("access_key", h.AccessKey).Bool("created", created).Str("client", ch.RemoteAddr()).Msg("ACL account updated")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processDeleteACL handles DELETE_ACL_CONFIG (51): an access key no account has is
// DELETE_ACL_CONFIG_FAILED, as in RocketMQ.
func (s *Service) processDeleteACL(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if s.deps.ACL == nil {
		return aclOff(aclDeleteFailed), nil
	}
	var h protocol.DeleteAccessConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	err := s.deps.ACL.Update(func(cfg *acl.Config) error {
		i := slices.IndexFunc(cfg.Accounts, func(a acl.Account) bool { return a.AccessKey == h.AccessKey })
		if i < 0 {
			return errors.New("no such account")
		}
		cfg.Accounts = slices.Delete(cfg.Accounts, i, i+1)
		return nil
	})
	if err != nil {
		return remoting.NewResponse(aclDeleteFailed, fmt.Sprintf("The accesskey[%s] corresponding to accessConfig has been deleted failed: %v",
			h.AccessKey, err)), nil
	}
	s.log.Warn().Str("access_key", h.AccessKey).Str("client", ch.RemoteAddr()).Msg("ACL account deleted")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processUpdateGlobalWhiteAddrs handles UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): the addresses
// replace the global white list. aclFileFullPath, when given, must name the node's own file:
// a path from the wire is never written.
func (s *Service) processUpdateGlobalWhiteAddrs(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if s.deps.ACL == nil {
		return aclOff(aclGlobalWhiteUpdateFailed), nil
	}
	var h protocol.UpdateGlobalWhiteAddrsConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return nil, err
	}
	if _, _, _, file := s.deps.ACL.Snapshot(); h.AclFileFullPath != "" && h.AclFileFullPath != file {
		where := "keeps its ACL in memory"
		if file != "" {
			where = "keeps its ACL in " + file
		}
		return remoting.NewResponse(aclGlobalWhiteUpdateFailed, fmt.Sprintf("Parameter value %s is not this node's ACL file: it %s",
			h.AclFileFullPath, where)), nil
	}
	addrs := splitList(h.GlobalWhiteAddrs)
	if err := s.deps.ACL.Update(func(cfg *acl.Config) error { cfg.GlobalWhiteRemoteAddresses = addrs; return nil }); err != nil {
		return remoting.NewResponse(aclGlobalWhiteUpdateFailed, fmt.Sprintf("The globalWhiteAddresses[%s] has been updated failed: %v",
			h.GlobalWhiteAddrs, err)), nil
	}
	s.log.Warn().Strs("addresses", addrs).Str("client", ch.RemoteAddr()).Msg("ACL global white addresses updated")
	return remoting.NewResponse(remoting.Success, ""), nil
}

// processACLVersion handles GET_BROKER_CLUSTER_ACL_INFO (52): the ACL's DataVersion, and the
// same by file in allAclFileVersion (one entry: the node's file, or aclInMemory).
func (s *Service) processACLVersion(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	if s.deps.ACL == nil {
		return aclOff(remoting.SystemError), nil
	}
	_, counter, at, file := s.deps.ACL.Snapshot()
	if file == "" {
		file = aclInMemory
	}
	version, err := json.Marshal(route.DataVersion{Timestamp: at.UnixMilli(), Counter: counter})
	if err != nil {
		return nil, err
	}
	all, err := json.Marshal(map[string]json.RawMessage{file: version})
	if err != nil {
		return nil, err
	}
	opts := s.core.Options()
	resp := remoting.NewResponse(remoting.Success, "")
	resp.ExtFields = remoting.EncodeHeader(&protocol.GetBrokerAclConfigResponseHeader{Version: string(version),
		AllAclFileVersion: string(all), BrokerName: opts.Broker.Name, BrokerAddr: opts.BrokerAddr, ClusterName: opts.Broker.ClusterName})
	return resp, nil
}

// processACLConfig handles GET_BROKER_CLUSTER_ACL_CONFIG (54), RocketMQ 5's: the global white
// addresses and every account, secret keys included (admin accounts only, internal/acl).
func (s *Service) processACLConfig(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	if s.deps.ACL == nil {
		return aclOff(remoting.SystemError), nil
	}
	cfg, _, _, _ := s.deps.ACL.Snapshot()
	body := protocol.AclConfigBody{GlobalWhiteAddrs: orEmpty(cfg.GlobalWhiteRemoteAddresses),
		PlainAccessConfigs: make([]protocol.PlainAccessConfig, 0, len(cfg.Accounts))}
	for _, a := range cfg.Accounts {
		a.TopicPerms, a.GroupPerms = orEmpty(a.TopicPerms), orEmpty(a.GroupPerms)
		body.PlainAccessConfigs = append(body.PlainAccessConfigs, a)
	}
	return jsonResponse(body)
}

// splitList reads a comma-separated list, items trimmed and empty ones dropped.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
