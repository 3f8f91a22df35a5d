// Package message is the RocketMQ 4.x message codec shared by the store, the broker and the
// clients: the stored record (docs/protocol.md §9.1) with IPv4 and IPv6 hosts, the sysFlag bits
// (§9.2), the properties string (§9.3) and its well-known keys (§9.4), offset message ids
// (§9.5), the SEND_BATCH_MESSAGE element encoding (§9.6), the Java tag hash code (§9.8) and the
// body CRC (§9.9). Properties strings are also edited in place, without a map (SetProperty,
// RemoveProperty, JoinProperties in properties.go), as the broker's send path and services do.
//
// The stored record, all integers big-endian (IPv4 hosts shown; an IPv6 host is 16+4 bytes
// instead of 4+4):
//
//	 0  TOTALSIZE       int32   whole record length
//	 4  MAGICCODE       int32   0xDAA320A7 (v1); 0xCBD43194 marks the blank end-of-file record
//	 8  BODYCRC         int32   CRC-32 (IEEE) of BODY & 0x7FFFFFFF
//	12  QUEUEID         int32
//	16  FLAG            int32
//	20  QUEUEOFFSET     int64   logical offset in the consume queue
//	28  PHYSICALOFFSET  int64   CommitLog offset of this record
//	36  SYSFLAG         int32   §9.2
//	40  BORNTIMESTAMP   int64   ms
//	48  BORNHOST        4+4     IPv4 + port (16+4 when SYSFLAG&0x10)
//	56  STORETIMESTAMP  int64   ms
//	64  STOREHOST       4+4     IPv4 + port (16+4 when SYSFLAG&0x20)
//	72  RECONSUMETIMES  int32
//	76  PREPARED TX OFF int64
//	84  BODYLENGTH      int32   B
//	88  BODY            B
//	    TOPICLENGTH     uint8   T
//	    TOPIC           T
//	    PROPERTIESLEN   int16   P
//	    PROPERTIES      P
//
// Encoding writes into a caller-supplied buffer (for the store, straight into a mapped
// segment) and decoding returns views into the input; neither allocates.
package message
