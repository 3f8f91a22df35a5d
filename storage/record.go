package storage

import (
	"encoding/binary"

	"github.com/mqgo/mq/internal/message"
)

const magicV1 = message.MagicCode

func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// recordStoreTimestamp reads STORETIMESTAMP of a record without decoding the rest.
func recordStoreTimestamp(b []byte) (int64, error) {
	if len(b) < message.MinRecordBytes {
		return 0, message.ErrShort
	}
	p := message.OffBornHost + 8
	if int32(binary.BigEndian.Uint32(b[message.OffSysFlag:]))&message.FlagBornHostV6 != 0 {
		p += 12
	}
	return int64(binary.BigEndian.Uint64(b[p:])), nil
}
