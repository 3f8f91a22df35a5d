package node

import (
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/clusterauth"
	"github.com/mqgo/mq/remoting"
)

// refusalLogInterval spaces the warnings about requests refused for the cluster secret: a
// stranger probing the port must not flood the log, an operator must still learn that a
// process of the deployment has the wrong secret.
const refusalLogInterval = 10 * time.Second

// guard is what the node's dispatchers run before any processor, or nil when there is nothing
// to check: the cluster secret's proof on the codes only the deployment's processes send
// (Options.Security.ClusterSecret), then ACL. Links the node opened to itself skip it (remoting.Trusted).
func (n *Node) guard() remoting.Guard {
	switch {
	case n.secret == nil && n.acl == nil:
		return nil
	case n.secret == nil:
		return n.acl.Check
	}
	var adminSigned func(*remoting.Command) bool
	if n.acl != nil {
		adminSigned = n.acl.SignedByAdmin
	}
	var lastLog atomic.Int64
	return func(ch remoting.Channel, req *remoting.Command) *remoting.Command {
		if refused := n.secret.Check(req, adminSigned); refused != nil {
			now := time.Now().UnixNano()
			if last := lastLog.Load(); now-last >= int64(refusalLogInterval) && lastLog.CompareAndSwap(last, now) {
				n.log.Warn().Str("addr", ch.RemoteAddr()).Int32("code", req.Code).Str("request", remoting.RequestCodeName(req.Code)).Str("remark", refused.Remark).
					Msg("request refused: cluster secret not proven (further refusals are not logged for a while)")
			}
			return refused
		}
		if n.acl != nil {
			return n.acl.Check(ch, req)
		}
		return nil
	}
}

// proveHooks are the hooks of the broker's TCP client: the cluster proof first, then ACL's
// signature, which must cover the proof.
func (o Options) proveHooks() []remoting.RPCHook {
	var hooks []remoting.RPCHook
	if o.Security.ClusterSecret != "" {
		hooks = append(hooks, clusterauth.NewProver(o.Security.ClusterSecret).Hook())
	}
	if !o.Security.Credentials.IsZero() {
		hooks = append(hooks, remoting.SigningHook(o.Security.Credentials))
	}
	return hooks
}
