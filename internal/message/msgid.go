package message

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
)

// ErrMsgID reports a malformed offset message id.
var ErrMsgID = errors.New("message: malformed offset message id")

const upperHex = "0123456789ABCDEF"

// AppendOffsetMsgID appends the offset message id of (storeHost, phyOffset) to dst (§9.5):
// upper-case hex of [store IP (4 or 16 bytes), port int32, offset int64]; 32 characters for
// IPv4, 56 for IPv6. IPv4-mapped IPv6 addresses are written as IPv4, as the record does.
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, phyOffset int64) []byte {
	var buf [28]byte
	n := putHost(buf[:], storeHost)
	binary.BigEndian.PutUint64(buf[n:], uint64(phyOffset))
	for _, c := range buf[:n+8] {
		dst = append(dst, upperHex[c>>4], upperHex[c&0xF])
	}
	return dst
}

// OffsetMsgIDLen is the length of the offset message id AppendOffsetMsgID writes for storeHost.
func OffsetMsgIDLen(storeHost netip.AddrPort) int { return 2 * (hostLen(storeHost) + 8) }

// OffsetMsgID returns the offset message id of (storeHost, phyOffset) as a string.
func OffsetMsgID(storeHost netip.AddrPort, phyOffset int64) string {
	var buf [56]byte
	return string(AppendOffsetMsgID(buf[:0], storeHost, phyOffset))
}

// ParseOffsetMsgID decodes an offset message id into the store host and CommitLog offset.
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	if len(id) != 32 && len(id) != 56 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: length %d", ErrMsgID, len(id))
	}
	var buf [28]byte
	n, err := hex.Decode(buf[:], []byte(id))
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %v", ErrMsgID, err)
	}
	hl := n - 8
	// The port is written as an int32: high bits set mean another kind of id (a unique key's
	// process id sits there), which would otherwise read as a port cut to 16 bits.
	if port := binary.BigEndian.Uint32(buf[hl-4 : hl]); port > 0xFFFF {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: port field %d out of range", ErrMsgID, port)
	}
	host := getHost(buf[:hl], hl)
	return host, int64(binary.BigEndian.Uint64(buf[hl:n])), nil
}
