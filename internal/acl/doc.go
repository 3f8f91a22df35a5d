// Package acl is RocketMQ 4.x's plain ACL on the serving side: the plain_acl.yml format
// (Config, Parse, LoadFile), its compiled form that decides each request (Checker), the
// holder a dispatcher consults (Guard, whose Check method value is a remoting.Guard) and the
// reload when the file changes (Watch).
//
// A request passes when its peer matches a global white address; else it must carry the
// AccessKey of an account, and pass when the peer matches that account's white address; else
// its Signature must be the account's (remoting.RequestSignature: the bytes the official
// clients sign); then the request's code and resources decide: admin codes need an admin
// account, and each topic or consumer group the request names needs PUB or SUB, from the
// account's topicPerms/groupPerms or else its default perms. Refusals are NO_PERMISSION with
// a remark saying what was missing, never a secret or the expected signature.
//
// A request that reads stored messages by offset or key is checked once more after the read,
// on the topic of each message it reached (CheckRead, read.go): the broker asks through its
// ReadCheck option, which the node sets to Guard.CheckRead.
//
// Where this differs from RocketMQ 4.9 (each is marked "not in RocketMQ 4.9" at its place):
//   - name-service writes (REGISTER_BROKER, DELETE_TOPIC_IN_NAMESRV, the KV config, ...) need
//     an admin account; RocketMQ's name server checks nothing. Name-service reads stay open.
//   - the controller's codes (BROKER_HEARTBEAT, 1001-1013, GET_BROKER_EPOCH_CACHE among them)
//     need an admin account: they decide which replica is master and where a store is cut;
//   - more admin codes, and resources for SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE(_V2),
//     QUERY_CONSUMER_OFFSET and LOCK_BATCH_MQ/UNLOCK_BATCH_MQ (codes.go);
//   - a send to a retry topic also needs SUB on the group it belongs to;
//   - reads by offset or key need SUB on the message's own topic (read.go), and reading a topic
//     that holds other topics' messages (SCHEDULE_TOPIC_XXXX, the timer and half topics) needs
//     an admin account;
//   - perm strings and address patterns RocketMQ would read as DENY or mis-match are errors
//     (perm.go, address.go), and a heartbeat or lock body that does not decode is refused.
//
// RocketMQ 5's gRPC calls are checked by CheckCall (call.go) against the same accounts: the
// endpoint (internal/proxy) parses the SDKs' authorization metadata and lists what each RPC
// needs; global white addresses admit no gRPC call.
//
// Files: config.go (YAML), perm.go, address.go (white address patterns), codes.go (what each
// request code needs), checker.go (New, Check, Guard), read.go (CheckRead), call.go (CheckCall,
// gRPC calls), watch.go (reload).
package acl
