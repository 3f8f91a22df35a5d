package clusterauth

import (
	"errors"
	"strconv"

	"github.com/mqgo/mq/remoting"
)

// Need is what a request code asks of the cluster secret, when a node has one.
type Need uint8

const (
	// NeedNothing: clients' and tools' requests, which the secret does not concern.
	NeedNothing Need = iota
	// NeedProof: requests only the deployment's own processes make (registration, controller
	// codes): a proof, always.
	NeedProof
	// NeedProofOrAdmin: name-service writes operators make with admin tools: a proof or, with
	// ACL on, an admin account's signature, so that Apache's mqadmin keeps working where ACL
	// is on. Without ACL nothing else says who an operator is: the proof is required.
	NeedProofOrAdmin
)

// Request codes remoting/codes.go does not list (RocketMQ's RequestCode.java).
const (
	codeUpdateNamesrvConfig  int32 = 318
	codeAddWritePermOfBroker int32 = 327
	// RocketMQ 5's controller codes run from CONTROLLER_ALTER_SYNC_STATE_SET (1001) to
	// CONTROLLER_APPLY_BROKER_ID (1013), GET_BROKER_EPOCH_CACHE (1007, served by brokers) and
	// UPDATE/GET_CONTROLLER_CONFIG (1009, 1010) among them.
	firstControllerCode int32 = 1001
	lastControllerCode  int32 = 1013
)

// NeedOf says what a request with code needs. Slave metadata sync (GET_ALL_TOPIC_CONFIG and the
// like) needs nothing: slaves prove it, but admin tools and dashboards read the same tables,
// and ACL guards them where that matters.
func NeedOf(code int32) Need {
	switch code {
	case remoting.RegisterBroker, remoting.UnregisterBroker, remoting.BrokerHeartbeat,
		// An unchanged answer to QUERY_DATA_VERSION keeps a broker's routes alive.
		remoting.QueryDataVersion:
		return NeedProof
	case remoting.PutKVConfig, remoting.DeleteKVConfig, remoting.DeleteTopicInNamesrv,
		remoting.RegisterTopicInNamesrv, remoting.WipeWritePermOfBroker, codeAddWritePermOfBroker,
		codeUpdateNamesrvConfig:
		return NeedProofOrAdmin
	}
	if code >= firstControllerCode && code <= lastControllerCode {
		return NeedProof
	}
	return NeedNothing
}

// Guard applies NeedOf with one Verifier, for a node's dispatchers. Safe for concurrent use.
type Guard struct{ v *Verifier }

// NewGuard returns a guard for secret, which must not be empty.
func NewGuard(secret string) *Guard { return &Guard{v: NewVerifier(secret)} }

// Check returns nil to let req through, or the NO_PERMISSION answer saying why not.
// adminSigned reports whether ACL is on and req carries a valid signature of an admin account;
// nil means ACL is off.
func (g *Guard) Check(req *remoting.Command, adminSigned func(*remoting.Command) bool) *remoting.Command {
	need := NeedOf(req.Code)
	if need == NeedNothing {
		return nil
	}
	err := g.v.Verify(req)
	if err == nil {
		return nil
	}
	remark := "cluster secret could not be verified for request code " + strconv.Itoa(int(req.Code)) + ": " + err.Error()
	if need == NeedProofOrAdmin && errors.Is(err, ErrNoProof) {
		if adminSigned != nil && adminSigned(req) {
			return nil
		}
		remark += "; this name-service write needs the cluster secret (mqadmin -cluster-secret) or, with ACL on, an admin account"
	}
	return remoting.NewResponse(remoting.NoPermission, remark)
}
