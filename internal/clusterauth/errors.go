package clusterauth

import "errors"

// Why a proof is refused. Their texts go into NO_PERMISSION remarks: they name what was wrong,
// never the secret or the MAC expected.
var (
	ErrNoProof   = errors.New("the request carries no cluster proof (" + ExtTime + ", " + ExtNonce + ", " + ExtProof + ")")
	ErrMalformed = errors.New("the cluster proof's fields are malformed")
	ErrStale     = errors.New("the proof's time is more than " + MaxSkew.String() + " from this node's clock (a replay, or clocks that disagree)")
	ErrMismatch  = errors.New("the proof does not match (another secret, or the request was changed)")
	ErrReplayed  = errors.New("the proof was used before (a replayed request)")
	ErrForgotten = errors.New("the proof is older than the oldest this node still remembers (too many recent requests): send it again")
)
