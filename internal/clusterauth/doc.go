// Package clusterauth proves, on remoting requests, that the sender knows the deployment's
// cluster secret (mq.Options.Security.ClusterSecret), and checks that proof where requests arrive.
//
// The processes of one deployment (brokers, name servers, controllers, slaves) share the
// secret. The requests only they make — broker registration with the name service, every
// controller code, GET_BROKER_EPOCH_CACHE — are refused without a valid proof (NeedOf says
// which codes), so a stranger who reaches a name-service or controller port cannot point routes
// at itself, take over a broker group or make a master cut its CommitLog. RocketMQ has no such
// check: its name server and controller trust whoever connects.
//
// # The proof
//
// A Prover adds three extension fields to a request (part of the format; do not change):
//
//	mqClusterTime   the sender's clock, milliseconds since the Unix epoch, in decimal
//	mqClusterNonce  16 random bytes, unpadded base64url (22 characters)
//	mqClusterProof  HMAC-SHA256 keyed by the secret over the content below, padded
//	                standard base64 (44 characters)
//
// The MAC covers, in this order (integers big-endian):
//
//	"mq-cluster-proof-v1" 0x00                 domain, so no other MAC keyed by the secret
//	                                           (the HA handshake's) is ever one of these
//	code        uint16                         the request code, so a captured frame cannot
//	                                           be replayed under another code
//	                                           (a code wider than a short, RocketMQ 5's POP
//	                                           codes, starts "mq-cluster-proof-w1" 0x00 and
//	                                           takes a uint32 here instead)
//	count       uint32                         how many fields follow
//	count times, in the byte order of names:   every extension field but mqClusterProof and
//	  len(name) uint32, name,                  ACL's AccessKey, Signature and SecurityToken
//	  len(value) uint32, value                 (mqClusterTime and mqClusterNonce included)
//	len(body)   uint32, body
//
// Lengths before names, values and the body keep two different requests from hashing the same
// bytes. ACL's fields are left out because ACL signs after the proof is added, over every
// field (the proof's among them): prove first, sign after.
//
// A Verifier accepts a proof when the MAC matches (compared in constant time), its time is
// within MaxSkew of the receiver's clock, and its nonce was not accepted before. Only
// requests whose MAC matched are remembered, so strangers cannot fill the memory of nonces;
// it is still capped (maxRemembered): past the cap the oldest are forgotten and proofs as old
// as those are refused from then on, so forgetting never lets a replay in.
//
// Files: proof.go (Prover, the MAC), verify.go (Verifier, the nonce memory), errors.go (why a
// proof is refused: the texts go into remarks, so they carry no package prefix), codes.go
// (which codes need a proof, the Guard).
package clusterauth
