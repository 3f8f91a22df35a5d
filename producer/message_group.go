package producer

import (
	"encoding/binary"
	"math/bits"
)

// Message groups (RocketMQ 5's FIFO messages): a message with a group goes to the queue the
// group hashes to, so one group's messages share a queue and keep their order there, and a
// FIFO consumer (consumer.SimpleConsumer with WithOrderly) gets them in that order. The group
// travels as the property __SHARDINGKEY (5.x's MessageConst.PROPERTY_SHARDING_KEY), which is
// also what makes a 5.x broker count the message as FIFO for a topic's message.type
// (message.PropertyMessageGroup).

// MaxMessageGroupLength is the longest message group, in bytes: RocketMQ 5 proxy's
// maxMessageGroupSize (64), which 5.x's SDKs meet before a broker sees the message.
const MaxMessageGroupLength = 64

// The SipHash-2-4 key of 5.x's clients: Guava's Hashing.sipHash24() default key (bytes 0x00 to
// 0x0f read as two little-endian words), which the Java client hashes message groups with and
// the Go client copies. Part of the queue choice; do not change, or one group's messages from
// our producers and from 5.x's would land on different queues.
const (
	groupHashK0 = 0x0706050403020100
	groupHashK1 = 0x0f0e0d0c0b0a0908
)

// groupQueue is the queue of group among queues (a topic's writable queues, sorted by broker
// name then queue id): SipHash-2-4 of the group's UTF-8 bytes as a signed 64-bit number,
// modulo the queue count made non-negative, as 5.x's PublishingLoadBalancer
// takeMessageQueueByMessageGroup does (Java LongMath.mod). queues is not empty.
func groupQueue(queues []MessageQueue, group string) MessageQueue {
	n := int64(len(queues))
	i := int64(sipHash24(groupHashK0, groupHashK1, []byte(group))) % n
	if i < 0 {
		i += n
	}
	return queues[i]
}

// sipHash24 is SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012)
// of msg under the key (k0, k1).
func sipHash24(k0, k1 uint64, msg []byte) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(msg)
	for len(msg) >= 8 {
		m := binary.LittleEndian.Uint64(msg)
		v3 ^= m
		round()
		round()
		v0 ^= m
		msg = msg[8:]
	}
	// The last word: the remaining bytes, low first, and the message length's low byte on top.
	var last [8]byte
	copy(last[:], msg)
	last[7] = byte(n)
	m := binary.LittleEndian.Uint64(last[:])
	v3 ^= m
	round()
	round()
	v0 ^= m
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
