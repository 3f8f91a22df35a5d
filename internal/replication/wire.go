package replication

import (
	"encoding/binary"
	"fmt"
)

// Wire sizes; part of the format, do not change (RocketMQ HAService).
const (
	// reportBytes is the size of the slave's offset report: its CommitLog max offset.
	reportBytes = 8
	// headerBytes is the size of a block header: start offset (8) + body size (4).
	headerBytes = 12
	// identityBytes is the size of a slave's identity (ours, controller mode): the magic
	// "MQID" and its broker id.
	identityBytes = 12
	// confirmBytes follow the block header to a slave that named itself (ours, controller
	// mode): the master's confirm offset, below which every member of its SyncStateSet holds
	// the log. The slave shows its consumers nothing past it, as the master does (RocketMQ 5's
	// AutoSwitchHA header carries it too).
	confirmBytes = 8
)

// identityMagic starts a slave's identity, so a slave that sends none (its first report
// instead) is told apart instead of being taken for broker id garbage.
const identityMagic = "MQID"

// putIdentity encodes a slave's identity into b[:identityBytes].
func putIdentity(b []byte, brokerID int64) {
	copy(b, identityMagic)
	binary.BigEndian.PutUint64(b[4:], uint64(brokerID))
}

// parseIdentity decodes a slave's identity; the broker id must be above 0 (a master is 0).
func parseIdentity(b []byte) (int64, error) {
	if string(b[:4]) != identityMagic {
		return 0, fmt.Errorf("%w: no identity where one is required", ErrProtocol)
	}
	id := int64(binary.BigEndian.Uint64(b[4:]))
	if id <= 0 {
		return 0, fmt.Errorf("%w: slave broker id %d, want above 0", ErrProtocol, id)
	}
	return id, nil
}

// MaxBlockBytes bounds the body size a slave accepts in one block; a larger size is a
// protocol error (garbage on the wire must not become a huge allocation). A master's
// TransferBatchBytes may not exceed it.
const MaxBlockBytes = 64 << 20

// putReport encodes a slave's offset report into b[:reportBytes].
func putReport(b []byte, offset int64) { binary.BigEndian.PutUint64(b, uint64(offset)) }

// parseReport decodes a slave's offset report from b[:reportBytes].
func parseReport(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// putHeader encodes a block header into b[:headerBytes].
func putHeader(b []byte, offset int64, size int) {
	binary.BigEndian.PutUint64(b, uint64(offset))
	binary.BigEndian.PutUint32(b[8:], uint32(size))
}

// putConfirm encodes the confirm offset that follows a block header to a named slave.
func putConfirm(b []byte, confirm int64) { binary.BigEndian.PutUint64(b, uint64(confirm)) }

// parseConfirm decodes it; a negative one is garbage, and is a protocol error.
func parseConfirm(b []byte) (int64, error) {
	c := int64(binary.BigEndian.Uint64(b))
	if c < 0 {
		return 0, fmt.Errorf("%w: confirm offset %d", ErrProtocol, c)
	}
	return c, nil
}

// parseHeader decodes a block header from b[:headerBytes].
func parseHeader(b []byte) (offset int64, size int32) {
	return int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:]))
}

// checkHeader is the slave's validation of a block header: the block must start where the
// slave's log ends (RocketMQ: slavePhyOffset != masterPhyOffset is an error) and its size must
// be within [0, MaxBlockBytes]. A heartbeat is a header with size 0.
func checkHeader(expected, offset int64, size int32) error {
	if offset != expected {
		return fmt.Errorf("%w: block at offset %d, slave log ends at %d", ErrProtocol, offset, expected)
	}
	if size < 0 || size > MaxBlockBytes {
		return fmt.Errorf("%w: block size %d out of bounds", ErrProtocol, size)
	}
	return nil
}

// checkReport is the master's validation of a slave's first report: it can serve a slave
// whose log ends within [min, max] of its own log (with min = 0 when the log is empty).
// A slave ahead of its master (it followed another master, or the master lost data) or
// behind the master's oldest segment cannot be served without corrupting its log.
func checkReport(offset, minOff, maxOff int64) error {
	if offset < 0 || offset > maxOff {
		return fmt.Errorf("%w: slave log ends at %d, past the master's end %d", ErrProtocol, offset, maxOff)
	}
	if offset < minOff {
		return fmt.Errorf("%w: slave log ends at %d, before the master's oldest offset %d", ErrProtocol, offset, minOff)
	}
	return nil
}

// checkAck is the master's validation of every later report: a slave holds at most what the
// master sent it (sent), so a report past that, and a fortiori past the master's end, is a
// lie or garbage and must not acknowledge anything. A report below the previous one is legal
// (RocketMQ accepts it): it lowers what the slave stands for (groupTransfer.report).
func checkAck(offset, sent int64) error {
	if offset < 0 || offset > sent {
		return fmt.Errorf("%w: slave reports its log ends at %d, past the %d bytes sent to it", ErrProtocol, offset, sent)
	}
	return nil
}
