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
	if c.ExtFields == nil {
		dst = append(dst, c.rawExt...) // the entries as they arrived
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
// first group allocates again. With raw set, a send request whose keys are the one-letter keys
// of SEND_MESSAGE_V2, each once, keeps its entries unparsed in c.rawExt (see rawSendCode).
func decodeBinaryHeader(b []byte, c *Command, maxExt int, raw bool) error {
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
	if raw && c.Flag&FlagResponse == 0 && rawSendCode(c.Code) && oneLetterKeysOnce(b[p:]) {
		c.rawExt = string(b[p:])
		return nil
	}
	c.ExtFields = make(map[string]string, n)
	putBinaryExtFields(c.ExtFields, &strs, b, p)
	return nil
}

// putBinaryExtFields puts the entries of b from p to its end, checked by
// countBinaryExtFields, into m; a key met twice keeps its last value.
func putBinaryExtFields(m map[string]string, strs *headerStrings, b []byte, p int) {
	for p < len(b) {
		kl := int(binary.BigEndian.Uint16(b[p:]))
		p += 2
		k := strs.slice(p, p+kl)
		p += kl
		vl := int(binary.BigEndian.Uint32(b[p:]))
		p += 4
		m[k] = strs.slice(p, p+vl)
		p += vl
	}
}

// rawSendCode reports the requests whose extension fields a server leaves unparsed: the sends
// of SEND_MESSAGE_V2's one-letter header, where building the map cost more than the rest of
// the decode (a map of 14 entries takes a table of its own). Their processor reads the fields
// from the frame (Command.FieldReader); the dispatcher builds the map for any other reader.
func rawSendCode(code int32) bool { return code == SendMessageV2 || code == SendBatchMessage }

// oneLetterKeysOnce reports whether every entry of ext, checked by countBinaryExtFields, has a
// one-byte key and no key comes twice: then a lookup finds the one value the map would hold.
func oneLetterKeysOnce(ext []byte) bool {
	var seen [4]uint64
	for p := 0; p < len(ext); {
		if binary.BigEndian.Uint16(ext[p:]) != 1 {
			return false
		}
		k := ext[p+2]
		if seen[k>>6]&(1<<(k&63)) != 0 {
			return false
		}
		seen[k>>6] |= 1 << (k & 63)
		p += 3
		p += 4 + int(binary.BigEndian.Uint32(ext[p:]))
	}
	return true
}

// rawExtLookup finds key among the binary entries of ext (Command.rawExt, one-byte keys each
// once), starting at the entry at from and wrapping around: a header is mostly read in the
// order its fields were written, so the next key is the entry after the last one found. It
// returns the value and where its entry starts (from again when key is absent).
func rawExtLookup(ext, key string, from int) (v string, at int, ok bool) {
	if len(key) != 1 {
		return "", from, false
	}
	if from >= len(ext) {
		from = 0
	}
	p := from
	for wrapped := false; ; {
		if p >= len(ext) {
			if wrapped || from == 0 {
				return "", from, false
			}
			p, wrapped = 0, true
		}
		if wrapped && p >= from {
			return "", from, false
		}
		k := ext[p+2]
		vl := int(uint32(ext[p+3])<<24 | uint32(ext[p+4])<<16 | uint32(ext[p+5])<<8 | uint32(ext[p+6]))
		end := p + 7 + vl
		if k == key[0] {
			return ext[p+7 : end], p, true
		}
		p = end
	}
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
