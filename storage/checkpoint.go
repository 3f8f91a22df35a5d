package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
)

// Checkpoint file layout. The first three fields are RocketMQ's StoreCheckpoint; the rest are
// ours. Part of the format; do not change.
//
//	 0 physicMsgTimestamp int64  store time of the last message flushed in the CommitLog
//	 8 logicsMsgTimestamp int64  store time of the last message flushed in the ConsumeQueues
//	16 indexMsgTimestamp  int64  store time of the last message flushed in the index
//	24 physicOffset       int64  CommitLog offset up to which data is known durable
//	32 dispatchedOffset   int64  CommitLog offset up to which ConsumeQueues are durable
//	40 magic              uint32 checkpointMagic
//	44 crc                uint32 CRC-32 (IEEE) of bytes 0..43
//	   padding to 4 KiB
const (
	checkpointBytes = 4096
	checkpointMagic = 0x4D514350 // "MQCP"
)

type checkpoint struct {
	PhysicMsgTimestamp int64
	LogicsMsgTimestamp int64
	IndexMsgTimestamp  int64
	PhysicOffset       int64
	DispatchedOffset   int64
}

func (c checkpoint) encode() []byte {
	b := make([]byte, checkpointBytes)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(c.PhysicMsgTimestamp))
	be.PutUint64(b[8:], uint64(c.LogicsMsgTimestamp))
	be.PutUint64(b[16:], uint64(c.IndexMsgTimestamp))
	be.PutUint64(b[24:], uint64(c.PhysicOffset))
	be.PutUint64(b[32:], uint64(c.DispatchedOffset))
	be.PutUint32(b[40:], checkpointMagic)
	be.PutUint32(b[44:], crc32.ChecksumIEEE(b[:44]))
	return b
}

func decodeCheckpoint(path string, b []byte) (checkpoint, error) {
	be := binary.BigEndian
	if len(b) < 48 {
		return checkpoint{}, corrupt(path, int64(len(b)), errors.New("checkpoint truncated"))
	}
	if be.Uint32(b[40:]) != checkpointMagic {
		return checkpoint{}, corrupt(path, 40, errors.New("bad checkpoint magic"))
	}
	if be.Uint32(b[44:]) != crc32.ChecksumIEEE(b[:44]) {
		return checkpoint{}, corrupt(path, 44, errors.New("checkpoint CRC mismatch"))
	}
	c := checkpoint{
		PhysicMsgTimestamp: int64(be.Uint64(b[0:])),
		LogicsMsgTimestamp: int64(be.Uint64(b[8:])),
		IndexMsgTimestamp:  int64(be.Uint64(b[16:])),
		PhysicOffset:       int64(be.Uint64(b[24:])),
		DispatchedOffset:   int64(be.Uint64(b[32:])),
	}
	if c.PhysicOffset < 0 || c.DispatchedOffset < 0 {
		return checkpoint{}, corrupt(path, 24, fmt.Errorf("negative offsets %d %d", c.PhysicOffset, c.DispatchedOffset))
	}
	return c, nil
}

func readCheckpoint(path string) (checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return checkpoint{}, err
	}
	return decodeCheckpoint(path, b)
}

// writeCheckpoint overwrites the checkpoint in place and fsyncs it. The 48 meaningful bytes
// lie in one sector; the CRC catches a torn write.
func writeCheckpoint(path string, c checkpoint, ops *fileOps) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = ops.writeAt(f, c.encode(), 0)
	if err == nil {
		err = ops.sync(f)
	}
	return errors.Join(err, f.Close())
}
