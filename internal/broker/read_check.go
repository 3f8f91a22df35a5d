package broker

import (
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
)

// ReadCheck decides whether the peer on ch, which made req, may see a stored message of topic:
// nil lets it, otherwise the answer to send instead (NO_PERMISSION). It runs after the read,
// because some requests do not name the topic of the message they reach (VIEW_MESSAGE_BY_ID
// names a CommitLog offset), or name another. The node sets it to its ACL's
// (internal/acl Guard.CheckRead), so the broker does not know about accounts.
type ReadCheck func(ch remoting.Channel, req *remoting.Command, topic string) *remoting.Command

// The requests that reach stored messages by something else than a topic and queue, and so
// check each message read here (a pull reads the ConsumeQueue of the topic it names, which
// ACL checked before the processor ran):
//
//   - VIEW_MESSAGE_BY_ID: the record at a CommitLog offset (query.go);
//   - QUERY_MESSAGE: records by key or unique key; the store keeps only the named topic's, and
//     a record the account may not read is left out of the answer (query.go);
//   - CONSUME_MESSAGE_DIRECTLY: a record by offset message id, relayed to a consumer
//     (consume_directly.go);
//   - CONSUMER_SEND_MSG_BACK: a record by offset, copied into the group's retry or dead-letter
//     topic, where the group's accounts could then pull it (retry.go).
//
// END_TRANSACTION, which names a half message by offsets, is checked the same way for PUB on
// the half message's real topic (Options.WriteCheck, transaction.go).

// checkRead asks Options.ReadCheck whether the peer of req may see rec, a stored record read
// for it; nil without ACL.
func (b *Broker) checkRead(ch remoting.Channel, req *remoting.Command, rec *message.Record) *remoting.Command {
	if b.opts.ReadCheck == nil {
		return nil
	}
	return b.opts.ReadCheck(ch, req, ownTopic(rec))
}

// checkReadRaw is checkRead for a record still encoded, as the store returned it.
func (b *Broker) checkReadRaw(ch remoting.Channel, req *remoting.Command, raw []byte) *remoting.Command {
	if b.opts.ReadCheck == nil {
		return nil
	}
	var rec message.Record
	if err := decodeInto(raw, &rec); err != nil {
		// The store checked the record when it read it; refuse rather than answer bytes
		// whose topic nobody could tell.
		return remoting.NewResponse(remoting.SystemError, "stored message does not decode: "+err.Error())
	}
	return b.checkRead(ch, req, &rec)
}

// ownTopic is the topic a stored message belongs to: the one it is stored in, or, while it
// waits in a topic that holds other topics' messages (delayed, timer, transaction half), the
// REAL_TOPIC it will be delivered to. Without REAL_TOPIC it is the holding topic, which only an
// admin account may read.
func ownTopic(rec *message.Record) string {
	topic := string(rec.Topic)
	if names.HoldsOthers(topic) {
		if real, ok := message.PropertyValue(rec.Properties, message.PropertyRealTopic); ok && len(real) > 0 {
			return string(real)
		}
	}
	return topic
}
