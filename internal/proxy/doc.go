// Package proxy serves RocketMQ 5's gRPC MessagingService (apache.rocketmq.v2, the API of the
// 5.x SDKs) for a node, as RocketMQ 5's proxy does in local mode: each RPC becomes the broker's
// own remoting requests (SEND_MESSAGE_V2, HEART_BEAT, UNREGISTER_CLIENT, ...) sent in-process
// to this node's broker, and routes come from the node's name servers, so every broker rule
// (limits, message types, POP, FIFO, transactions) applies unchanged.
//
// Every SDK client (named by the x-mq-client-id metadata) gets a connection of its own to the
// broker, an in-process transport (clients.go): the broker then sees it as it sees a remoting
// client — its producer and consumer groups, its channel for transaction checks — and forgets
// it when the client ends (NotifyClientTermination) or stays silent past the channel expiry.
// The client's Telemetry stream is kept with it (client.Stream), so broker requests for the
// client can be turned into Telemetry commands: a processor registered on the client's
// transport when it is made (clients.onNew) receives them, as a remoting client's processors
// receive CHECK_TRANSACTION_STATE: transaction.go relays that one to the stream as a
// recover_orphaned_transaction_command, whose answer comes back as EndTransaction.
//
// Consumption follows the proxy's activities: receive.go pops the whole broker for a group
// (POP_MESSAGE, queue id -1) and streams the messages, ack.go reads the receipt handles that
// come back (the broker's POP handle and the message's CommitLog offset, checked before the
// broker sees them) for ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME and the dead-letter forward,
// assignment.go answers push consumers from the route, offsets.go serves pull consumers, and
// message_out.go turns a stored message into the SDKs' Message as GrpcConverter does.
//
// With the node's ACL on, every call is checked before its handler (auth.go): the SDKs'
// authorization metadata names an account and signs the call's x-mq-date-time, each RPC needs
// the permissions RocketMQ's proxy asks of it, and the broker requests an admitted call becomes
// are signed with the caller's account (service.invoke), so the broker's own ACL checks them as
// that account's, never as a trusted link's.
//
// The listener (server.go) serves plaintext and TLS on one port, told apart by the first byte
// as the remoting listeners do. RPCs not built yet answer gRPC's UNIMPLEMENTED.
package proxy
