package acl

import (
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
)

// Reads of stored messages are decided twice. Check, before the processor runs, decides on the
// names the request carries; but VIEW_MESSAGE_BY_ID names only a CommitLog offset, and the
// other reads by offset (CONSUME_MESSAGE_DIRECTLY, CONSUMER_SEND_MSG_BACK) name a group, not
// the topic of the message they reach. So the broker, once it has read a message, asks
// CheckRead whether the request's account may read that message's own topic: the permission a
// pull of that topic needs (SUB, a retry topic standing for its group). RocketMQ checks none of
// these against the message read (4.9 nothing at all for VIEW_MESSAGE_BY_ID; 5's ACL 2.0 the
// topic the request names, which the broker never compares with the message's), so any account
// can walk the CommitLog from offset 0.

// CheckRead decides whether the request req, which Check let through from remoteAddr, may see
// a stored message of topic: nil lets it, otherwise the NO_PERMISSION answer, worded as Check's.
// The signature is not verified again: Check did, for this same request, just before its
// processor read the message. White addresses and admin accounts without topic or group perms
// read everything, as they make any request; a topic that holds other topics' messages
// (names.HoldsOthers) needs an admin account, as a pull of it does.
func (c *Checker) CheckRead(remoteAddr string, req *remoting.Command, topic string) *remoting.Command {
	return c.checkStored(remoteAddr, req, topic, permSub)
}

// CheckWrite decides, as CheckRead does, whether req may change what is delivered on topic: the
// real topic of a half message that END_TRANSACTION commits or rolls back. It needs PUB there,
// what sending the half message needed; the header names only a producer group and offsets,
// which plain ACL does not check, so without it any signed account that learns the offsets
// could decide another producer's transaction (RocketMQ 5's ACL 2.0 checks PUB on a topic too).
func (c *Checker) CheckWrite(remoteAddr string, req *remoting.Command, topic string) *remoting.Command {
	return c.checkStored(remoteAddr, req, topic, permPub)
}

// checkStored is CheckRead and CheckWrite: p on the topic of a message the broker read.
func (c *Checker) checkStored(remoteAddr string, req *remoting.Command, topic string, p perm) *remoting.Command {
	peer := lazyPeer{remote: remoteAddr}
	for i := range c.global {
		if c.global[i].match(peer.addr()) {
			return nil
		}
	}
	accessKey := req.ExtFields[remoting.ExtAccessKey]
	if accessKey == "" {
		return refuse("no AccessKey: the request is not signed")
	}
	a := c.accounts[accessKey]
	if a == nil {
		// Only when the accounts changed between Check and the read.
		return refuse("no account AccessKey=" + accessKey)
	}
	if a.white.kind != patternNever && a.white.match(peer.addr()) {
		return nil
	}
	if a.ownsAll {
		return nil
	}
	if names.HoldsOthers(topic) && !a.admin {
		return refuseHeld(accessKey, topic)
	}
	var inline [1]need
	needs := needsTopic(inline[:0], topic, p)
	if len(needs) == 0 {
		// A stored message always has a topic; a record without one is nobody's.
		verb := " may not read"
		if p == permPub {
			verb = " may not decide"
		}
		return refuse("AccessKey=" + accessKey + verb + " a message without a topic")
	}
	if !a.owned(needs[0]).allows(p) {
		return a.refuseNeed(needs[0])
	}
	return nil
}

// CheckRead is Checker.CheckRead with the Checker in effect and the channel's peer address.
// Channels the dispatcher's guard does not check (remoting.Trusted) read without a check, and
// so does every channel while ACL is off. A refusal counts in Refused.
func (g *Guard) CheckRead(ch remoting.Channel, req *remoting.Command, topic string) *remoting.Command {
	c := g.checker.Load()
	if c == nil || remoting.Trusted(ch) {
		return nil
	}
	resp := c.CheckRead(ch.RemoteAddr(), req, topic)
	if resp != nil {
		g.refused.Add(1)
	}
	return resp
}

// CheckWrite is Checker.CheckWrite with the Checker in effect, as CheckRead.
func (g *Guard) CheckWrite(ch remoting.Channel, req *remoting.Command, topic string) *remoting.Command {
	c := g.checker.Load()
	if c == nil || remoting.Trusted(ch) {
		return nil
	}
	resp := c.CheckWrite(ch.RemoteAddr(), req, topic)
	if resp != nil {
		g.refused.Add(1)
	}
	return resp
}

// readsOthers finds a SUB need on a topic that holds other topics' messages: reading it (a
// pull, a query, a subscription) reads every topic's delayed, timer or half messages, which
// only an admin account may. Not in RocketMQ 4.9, where such a topic is one like any other and
// an account's defaultTopicPerm of SUB reads it.
func readsOthers(needs []need) (string, bool) {
	for _, n := range needs {
		if !n.group && n.perm == permSub && names.HoldsOthers(n.name) {
			return n.name, true
		}
	}
	return "", false
}

func refuseHeld(accessKey, topic string) *remoting.Command {
	return refuse("AccessKey=" + accessKey + " needs admin to read topic " + topic +
		": it holds the messages of other topics")
}
