package remoting

import (
	"encoding/binary"
	"math"
	"strconv"
)

// The compact ROCKETMQ header (serialize type 1), docs/protocol.md §1.5:
//
//	code int16 | language byte | version int16 | opaque int32 | flag int32 |
//	remark length int32 | remark | extFields length int32 |
//	{ key length int16 | key | value length int32 | value }*
const binaryFixedBytes = 21

// binaryCarries reports whether the ROCKETMQ header can carry code, which it writes as a short.
func binaryCarries(code int32) bool { return code >= math.MinInt16 && code <= math.MaxInt16 }

func appendBinaryHeader(dst []byte, c *Command) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code))
	dst = append(dst, byte(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if c.ExtFields == nil && c.Fields != nil {
		dst = c.Fields.AppendBinary(dst)
	}
	for k, v := range c.ExtFields {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst
}

// BinaryHeader is a Header that writes its extension fields as ROCKETMQ header entries itself
// (headergen generates AppendBinary beside Encode), so a request needs no map on its way out.
type BinaryHeader interface {
	SizedHeader
	// AppendBinary appends the entries Encode would put in the map.
	AppendBinary(dst []byte) []byte
}

// AppendBinaryString appends the ROCKETMQ header entry k=v.
func AppendBinaryString(dst []byte, k, v string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// AppendBinaryInt32, AppendBinaryInt64 and AppendBinaryBool append the entry k=v with v as
// PutInt32, PutInt64 and PutBool write it.
func AppendBinaryInt32(dst []byte, k string, v int32) []byte {
	return AppendBinaryInt64(dst, k, int64(v))
}

func AppendBinaryInt64(dst []byte, k string, v int64) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = strconv.AppendInt(dst, v, 10)
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

func AppendBinaryBool(dst []byte, k string, v bool) []byte {
	return AppendBinaryString(dst, k, strconv.FormatBool(v))
}

// decodeBinaryHeader decodes b into c, failing at entry maxExt+1 so a hostile header cannot
// build a large map (maxExt <= 0: no limit). The entries are checked before anything is
// allocated for them, which also gives the map its exact size: a map that grows past its
// first group allocates again.
func decodeBinaryHeader(b []byte, c *Command, maxExt int) error {
	if len(b) < binaryFixedBytes {
		return malformed("binary header of %d bytes is under %d", len(b), binaryFixedBytes)
	}
	c.Code = int32(int16(binary.BigEndian.Uint16(b)))
	c.Language = Language(b[2])
	c.Version = int16(binary.BigEndian.Uint16(b[3:]))
	c.Opaque = int32(binary.BigEndian.Uint32(b[5:]))
	c.Flag = int32(binary.BigEndian.Uint32(b[9:]))
	rl := int(binary.BigEndian.Uint32(b[13:]))
	p := 17
	if rl < 0 || rl > len(b)-p-4 {
		return malformed("binary header remark length %d overruns the header", rl)
	}
	strs := headerStrings{b: b}
	c.Remark = strs.slice(p, p+rl)
	p += rl
	el := int(binary.BigEndian.Uint32(b[p:]))
	p += 4
	if el < 0 || el != len(b)-p {
		return malformed("binary header extFields length %d, %d bytes remain", el, len(b)-p)
	}
	if el == 0 {
		return nil
	}
	n, err := countBinaryExtFields(b, p, maxExt)
	if err != nil {
		return err
	}
	c.ExtFields = make(map[string]string, n)
	for p < len(b) {
		kl := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		k := strs.slice(p, p+kl)
		p += kl
		vl := int(binary.BigEndian.Uint32(b[p:]))
		p += 4
		c.ExtFields[k] = strs.slice(p, p+vl)
		p += vl
	}
	return nil
}

// countBinaryExtFields walks the entries of b from p to its end without decoding them and
// returns how many there are, or the error the first bad one (or entry maxExt+1) deserves.
func countBinaryExtFields(b []byte, p, maxExt int) (int, error) {
	n := 0
	for ; p < len(b); n++ {
		if maxExt > 0 && n == maxExt {
			return 0, tooManyExtFields(maxExt)
		}
		if len(b)-p < 2 {
			return 0, malformed("binary header: truncated key length at %d", p)
		}
		kl := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		if kl > len(b)-p-4 {
			return 0, malformed("binary header: key length %d overruns at %d", kl, p)
		}
		p += kl
		vl := int(int32(binary.BigEndian.Uint32(b[p:])))
		p += 4
		if vl < 0 || vl > len(b)-p {
			return 0, malformed("binary header: value length %d overruns at %d", vl, p)
		}
		p += vl
	}
	return n, nil
}
