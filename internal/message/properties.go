package message

import (
	"sort"
	"strconv"
	"strings"
)

// MarshalProperties encodes props as `name 0x01 value 0x02` pairs, a 0x02 after every pair
// (§9.3). Names are written in sorted order so the output is deterministic.
func MarshalProperties(props map[string]string) string {
	if len(props) == 0 {
		return ""
	}
	names := make([]string, 0, len(props))
	n := 0
	for k, v := range props {
		names = append(names, k)
		n += len(k) + len(v) + 2
	}
	sort.Strings(names)
	var sb strings.Builder
	sb.Grow(n)
	for _, k := range names {
		sb.WriteString(k)
		sb.WriteByte(NameValueSeparator)
		sb.WriteString(props[k])
		sb.WriteByte(PropertySeparator)
	}
	return sb.String()
}

// UnmarshalProperties decodes a properties string the way the Go client does: split on 0x02,
// split each piece on 0x01, keep pieces with exactly two parts (empty values are kept).
func UnmarshalProperties(b []byte) map[string]string {
	m := make(map[string]string)
	for len(b) > 0 {
		var piece []byte
		if i := indexByte(b, PropertySeparator); i >= 0 {
			piece, b = b[:i], b[i+1:]
		} else {
			piece, b = b, nil
		}
		i := indexByte(piece, NameValueSeparator)
		if i < 0 || indexByte(piece[i+1:], NameValueSeparator) >= 0 {
			continue
		}
		m[string(piece[:i])] = string(piece[i+1:])
	}
	return m
}

// UnmarshalPropertiesString is UnmarshalProperties over a string whose names and values the
// map keeps as substrings, so decoding costs the map and nothing per property. The map is
// sized for extra more entries, which a caller that adds its own saves a growth with.
func UnmarshalPropertiesString(s string, extra int) map[string]string {
	m := make(map[string]string, strings.Count(s, propertySeparator)+1+extra)
	for len(s) > 0 {
		var piece string
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			piece, s = s[:i], s[i+1:]
		} else {
			piece, s = s, ""
		}
		i := strings.IndexByte(piece, NameValueSeparator)
		if i < 0 || strings.IndexByte(piece[i+1:], NameValueSeparator) >= 0 {
			continue
		}
		m[piece[:i]] = piece[i+1:]
	}
	return m
}

const propertySeparator = string(rune(PropertySeparator))

// PropertyValue returns the value of key in the encoded properties b without allocating.
// Pieces are judged as UnmarshalProperties judges them; the last match wins, as in a map.
func PropertyValue(b []byte, key string) ([]byte, bool) {
	var val []byte
	found := false
	for len(b) > 0 {
		var piece []byte
		if i := indexByte(b, PropertySeparator); i >= 0 {
			piece, b = b[:i], b[i+1:]
		} else {
			piece, b = b, nil
		}
		if len(piece) <= len(key) || piece[len(key)] != NameValueSeparator || string(piece[:len(key)]) != key {
			continue
		}
		v := piece[len(key)+1:]
		if indexByte(v, NameValueSeparator) >= 0 {
			continue
		}
		val, found = v, true
	}
	return val, found
}

// PropertyValueString is PropertyValue over a string.
func PropertyValueString(s, key string) (string, bool) {
	var val string
	found := false
	for len(s) > 0 {
		var piece string
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			piece, s = s[:i], s[i+1:]
		} else {
			piece, s = s, ""
		}
		if len(piece) <= len(key) || piece[len(key)] != NameValueSeparator || piece[:len(key)] != key {
			continue
		}
		v := piece[len(key)+1:]
		if strings.IndexByte(v, NameValueSeparator) >= 0 {
			continue
		}
		val, found = v, true
	}
	return val, found
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// Editing encoded properties strings ("name 0x01 value 0x02" pairs, docs/protocol.md §9.3) without
// decoding them into a map: the broker's send path adds CLUSTER to every message, so the common
// case is one concatenation.

// SetProperty returns props with key set to value. When key is absent (the common case) the pair
// is appended; otherwise every piece named key is dropped first, so the result parses to the
// same map with key replaced.
func SetProperty(props, key, value string) string {
	if v, ok := PropertyValueString(props, key); ok {
		if v == value {
			return props
		}
		props = RemoveProperty(props, key)
	}
	if props != "" && props[len(props)-1] != PropertySeparator {
		return props + string(PropertySeparator) + key + string(NameValueSeparator) + value +
			string(PropertySeparator)
	}
	return props + key + string(NameValueSeparator) + value + string(PropertySeparator)
}

// RemoveProperty returns props without the pieces named key. Other pieces are kept byte for
// byte, malformed ones included.
func RemoveProperty(props, key string) string {
	if !strings.Contains(props, key) {
		return props
	}
	var sb strings.Builder
	sb.Grow(len(props))
	for rest := props; rest != ""; {
		piece := rest
		if i := strings.IndexByte(rest, PropertySeparator); i >= 0 {
			piece, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = ""
		}
		if len(piece) > len(key) && piece[len(key)] == NameValueSeparator && piece[:len(key)] == key {
			continue
		}
		sb.WriteString(piece)
	}
	return sb.String()
}

// JoinProperties appends a batch's wrapper properties to one element's, as RocketMQ 4.9's batch
// encoder does, adding the separator the element may lack.
func JoinProperties(elem []byte, batch string) string {
	if batch == "" {
		return string(elem)
	}
	if len(elem) > 0 && elem[len(elem)-1] != PropertySeparator {
		return string(elem) + string(PropertySeparator) + batch
	}
	return string(elem) + batch
}

// DelayLevel returns the DELAY property as a level, or 0 when absent or not a number.
func DelayLevel(props string) int {
	v, ok := PropertyValueString(props, PropertyDelayTimeLevel)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
