package message

import (
	"unicode/utf8"
	"unsafe"
)

// TagsHashCode is the consume-queue tag code of a TAGS value: Java's String.hashCode over the
// UTF-16 code units of tags, sign-extended to int64 (RocketMQ tagsString2tagsCode). Invalid
// UTF-8 bytes count as U+FFFD, as Java's decoder would produce. An empty string hashes to 0.
func TagsHashCode(tags string) int64 {
	return int64(JavaStringHash(tags))
}

// JavaStringHash is Java's String.hashCode of s: h = 31*h + c over UTF-16 code units, in
// wrapping int32 arithmetic. It does not allocate: the bytes of s are only read.
func JavaStringHash(s string) int32 {
	return JavaHashContinue(0, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// JavaBytesHash is JavaStringHash of the UTF-8 bytes b, without converting them to a string.
func JavaBytesHash(b []byte) int32 { return JavaHashContinue(0, b) }

// JavaHashContinue continues a Java string hash h over the UTF-8 bytes b, so that
// JavaHashContinue(JavaBytesHash(x), y) == JavaBytesHash(x+y) when x ends on a rune boundary.
func JavaHashContinue(h int32, b []byte) int32 {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		i += n
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
