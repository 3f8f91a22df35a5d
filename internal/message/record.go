package message

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// Sizes of the record's fixed parts. Part of the format; do not change.
const (
	// fixedBytes is the record size without body, topic and properties, IPv4 hosts:
	// 91 = 4+4+4+4+4+8+8+4+8+8+8+8+4+8+4 + 1 (topic length) + 2 (properties length).
	fixedBytes = 91
	// MaxTopicBytes is the longest topic the one-byte TOPICLENGTH field admits for Java
	// compatibility.
	MaxTopicBytes = 127
	// MaxPropertiesBytes is the longest properties string the signed 16-bit length admits.
	MaxPropertiesBytes = 32767
	// MinRecordBytes is the smallest possible record (IPv4 hosts, empty body, topic and
	// properties).
	MinRecordBytes = fixedBytes
)

// Field offsets of the fixed prefix, the same for IPv4 and IPv6 layouts. Part of the format.
const (
	OffTotalSize      = 0
	OffMagic          = 4
	OffBodyCRC        = 8
	OffQueueID        = 12
	OffFlag           = 16
	OffQueueOffset    = 20
	OffPhysicalOffset = 28
	OffSysFlag        = 36
	OffBornTimestamp  = 40
	OffBornHost       = 48
)

// Errors returned by the decoders. Callers add the file and offset.
var (
	ErrShort    = errors.New("message: record truncated")
	ErrMagic    = errors.New("message: bad magic code")
	ErrSize     = errors.New("message: total size does not match fields")
	ErrBodyCRC  = errors.New("message: body CRC mismatch")
	ErrTooLarge = errors.New("message: field too large")
)

// Message is what a producer hands to the store: every field of the record the store does not
// assign itself (queue offset, physical offset and store timestamp are assigned at append).
type Message struct {
	Topic   string
	QueueID int32
	Flag    int32
	Body    []byte
	// Properties is the encoded properties string (§9.3).
	Properties string
	// SysFlag as sent; the IPv6 host bits are set by EncodeRecord from the hosts.
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	// BodyCRC is the masked CRC of Body; EncodeRecord writes it as given. Use BodyCRC(Body).
	BodyCRC int32
}

// hostLen is the encoded width of a host: 8 for IPv4 (incl. IPv4-mapped IPv6), 20 otherwise.
func hostLen(a netip.AddrPort) int {
	if a.Addr().Is4() || a.Addr().Is4In6() || !a.Addr().IsValid() {
		return 8
	}
	return 20
}

// RecordSize returns the encoded size of m, or an error if a field does not fit the format.
func RecordSize(m *Message) (int, error) {
	if len(m.Topic) > MaxTopicBytes || len(m.Topic) == 0 {
		return 0, fmt.Errorf("%w: topic length %d", ErrTooLarge, len(m.Topic))
	}
	if len(m.Properties) > MaxPropertiesBytes {
		return 0, fmt.Errorf("%w: properties length %d", ErrTooLarge, len(m.Properties))
	}
	return fixedBytes - 16 + hostLen(m.BornHost) + hostLen(m.StoreHost) + len(m.Body) +
		len(m.Topic) + len(m.Properties), nil
}

// EncodeRecord writes m as a stored record into dst, which must hold size bytes (from
// RecordSize), with the given queue offset, physical offset and store timestamp. It returns
// the sysFlag written (m.SysFlag with the IPv6 bits set from the hosts). It does not allocate.
func EncodeRecord(dst []byte, size int, m *Message, queueOffset, phyOffset, storeTimestamp int64) int32 {
	be := binary.BigEndian
	_ = dst[size-1]
	sysFlag := m.SysFlag &^ (FlagBornHostV6 | FlagStoreHostV6)
	if hostLen(m.BornHost) == 20 {
		sysFlag |= FlagBornHostV6
	}
	if hostLen(m.StoreHost) == 20 {
		sysFlag |= FlagStoreHostV6
	}
	be.PutUint32(dst[OffTotalSize:], uint32(size))
	magic := MagicCode
	be.PutUint32(dst[OffMagic:], uint32(magic))
	be.PutUint32(dst[OffBodyCRC:], uint32(m.BodyCRC))
	be.PutUint32(dst[OffQueueID:], uint32(m.QueueID))
	be.PutUint32(dst[OffFlag:], uint32(m.Flag))
	be.PutUint64(dst[OffQueueOffset:], uint64(queueOffset))
	be.PutUint64(dst[OffPhysicalOffset:], uint64(phyOffset))
	be.PutUint32(dst[OffSysFlag:], uint32(sysFlag))
	be.PutUint64(dst[OffBornTimestamp:], uint64(m.BornTimestamp))
	p := OffBornHost
	p += putHost(dst[p:], m.BornHost)
	be.PutUint64(dst[p:], uint64(storeTimestamp))
	p += 8
	p += putHost(dst[p:], m.StoreHost)
	be.PutUint32(dst[p:], uint32(m.ReconsumeTimes))
	p += 4
	be.PutUint64(dst[p:], uint64(m.PreparedTransactionOffset))
	p += 8
	be.PutUint32(dst[p:], uint32(len(m.Body)))
	p += 4
	p += copy(dst[p:], m.Body)
	dst[p] = byte(len(m.Topic))
	p++
	p += copy(dst[p:], m.Topic)
	be.PutUint16(dst[p:], uint16(len(m.Properties)))
	p += 2
	copy(dst[p:], m.Properties)
	return sysFlag
}

func putHost(dst []byte, a netip.AddrPort) int {
	addr := a.Addr()
	if addr.Is4In6() {
		addr = addr.Unmap()
	}
	if !addr.IsValid() {
		addr = netip.IPv4Unspecified()
	}
	if addr.Is4() {
		b := addr.As4()
		copy(dst, b[:])
		binary.BigEndian.PutUint32(dst[4:], uint32(a.Port()))
		return 8
	}
	b := addr.As16()
	copy(dst, b[:])
	binary.BigEndian.PutUint32(dst[16:], uint32(a.Port()))
	return 20
}

// Record is a decoded stored record. Body, Topic and Properties are views into the decoded
// bytes: valid as long as those bytes are.
type Record struct {
	TotalSize                 int32
	Magic                     int32
	BodyCRC                   int32
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	PhysicalOffset            int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	Topic                     []byte
	Properties                []byte
}

// Copy is r to be stored again under topic and queue with the encoded properties props: same
// body, flags, times, hosts and reconsume times (the broker's services move records so: a
// delayed message to its topic, a half message to the op topic). The store's Message has the
// same fields, so a caller converts the result to it.
func (r *Record) Copy(topic string, queueID int32, props string) *Message {
	return &Message{
		Topic:                     topic,
		QueueID:                   queueID,
		Flag:                      r.Flag,
		Body:                      r.Body,
		Properties:                props,
		SysFlag:                   r.SysFlag,
		BornTimestamp:             r.BornTimestamp,
		BornHost:                  r.BornHost,
		StoreHost:                 r.StoreHost,
		ReconsumeTimes:            r.ReconsumeTimes,
		PreparedTransactionOffset: r.PreparedTransactionOffset,
	}
}

// DecodeRecord decodes the record at the start of b into r and returns its size. It checks
// the magic code, that TOTALSIZE fits in b and equals the sum of the field widths, and, when
// checkCRC is set, the body CRC. A blank end-of-file record is reported as ErrMagic with
// r.Magic == BlankMagicCode and r.TotalSize set (callers that walk a segment check for it).
// It never panics and never allocates.
func DecodeRecord(b []byte, r *Record, checkCRC bool) (int, error) {
	be := binary.BigEndian
	if len(b) < 8 {
		return 0, ErrShort
	}
	r.TotalSize = int32(be.Uint32(b[OffTotalSize:]))
	r.Magic = int32(be.Uint32(b[OffMagic:]))
	if r.Magic != MagicCode {
		return 0, ErrMagic
	}
	size := int(r.TotalSize)
	if size < MinRecordBytes {
		return 0, fmt.Errorf("%w: total size %d", ErrSize, size)
	}
	if size > len(b) {
		return 0, ErrShort
	}
	b = b[:size]
	r.BodyCRC = int32(be.Uint32(b[OffBodyCRC:]))
	r.QueueID = int32(be.Uint32(b[OffQueueID:]))
	r.Flag = int32(be.Uint32(b[OffFlag:]))
	r.QueueOffset = int64(be.Uint64(b[OffQueueOffset:]))
	r.PhysicalOffset = int64(be.Uint64(b[OffPhysicalOffset:]))
	r.SysFlag = int32(be.Uint32(b[OffSysFlag:]))
	r.BornTimestamp = int64(be.Uint64(b[OffBornTimestamp:]))
	p := OffBornHost
	bornLen, storeLen := 8, 8
	if r.SysFlag&FlagBornHostV6 != 0 {
		bornLen = 20
	}
	if r.SysFlag&FlagStoreHostV6 != 0 {
		storeLen = 20
	}
	// Fixed part up to and including BODYLENGTH.
	if p+bornLen+8+storeLen+4+8+4 > size {
		return 0, fmt.Errorf("%w: total size %d too small for hosts", ErrSize, size)
	}
	r.BornHost = getHost(b[p:], bornLen)
	p += bornLen
	r.StoreTimestamp = int64(be.Uint64(b[p:]))
	p += 8
	r.StoreHost = getHost(b[p:], storeLen)
	p += storeLen
	r.ReconsumeTimes = int32(be.Uint32(b[p:]))
	p += 4
	r.PreparedTransactionOffset = int64(be.Uint64(b[p:]))
	p += 8
	bodyLen := int(int32(be.Uint32(b[p:])))
	p += 4
	if bodyLen < 0 || bodyLen > size-p-3 {
		return 0, fmt.Errorf("%w: body length %d", ErrSize, bodyLen)
	}
	r.Body = b[p : p+bodyLen : p+bodyLen]
	p += bodyLen
	topicLen := int(b[p])
	p++
	if topicLen > size-p-2 {
		return 0, fmt.Errorf("%w: topic length %d", ErrSize, topicLen)
	}
	r.Topic = b[p : p+topicLen : p+topicLen]
	p += topicLen
	propLen := int(be.Uint16(b[p:]))
	p += 2
	if p+propLen != size {
		return 0, fmt.Errorf("%w: properties length %d, total size %d", ErrSize, propLen, size)
	}
	r.Properties = b[p:size:size]
	if checkCRC && BodyCRC(r.Body) != r.BodyCRC {
		return 0, ErrBodyCRC
	}
	return size, nil
}

func getHost(b []byte, n int) netip.AddrPort {
	if n == 8 {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(binary.BigEndian.Uint32(b[4:])))
	}
	return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[:16])), uint16(binary.BigEndian.Uint32(b[16:])))
}

// BodyCRC is the record's BODYCRC: CRC-32 (IEEE) of body masked with 0x7FFFFFFF (§9.9).
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// PutBlank writes the blank end-of-file record header (TOTALSIZE = len(dst), BLANK magic) at
// the start of dst, which must hold at least BlankMinBytes.
func PutBlank(dst []byte) {
	binary.BigEndian.PutUint32(dst, uint32(len(dst)))
	magic := BlankMagicCode
	binary.BigEndian.PutUint32(dst[4:], uint32(magic))
}
