package remoting

import (
	"fmt"
	"strconv"
)

// Typed request and response headers travel in Command.ExtFields as strings (docs/protocol.md §1.4).
// A header type implements Encode to fill the map and Decode to read it back. internal/protocol
// generates both from struct tags as straight-line calls to FieldReader, whose errors name the
// field, and to the Put helpers.

// Header is a typed custom header.
type Header interface {
	// Encode writes the header's fields into ext.
	Encode(ext map[string]string)
	// Decode reads the header's fields from ext, returning a *HeaderError for the first missing
	// or invalid required field.
	Decode(ext map[string]string) error
}

// HeaderError names the field of a request header that was missing or invalid.
type HeaderError struct {
	Field  string
	Value  string
	Reason string
}

// Error implements error. The text is sent to the caller as the response remark.
func (e *HeaderError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("the custom field <%s> is %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("the custom field <%s> is %s: %q", e.Field, e.Reason, e.Value)
}

// SizedHeader is a Header that says how many entries its Encode writes at most, so that
// EncodeHeader makes the map at its final size: a map of up to 8 entries costs two
// allocations, a larger one four, and one that grows past 8 five.
type SizedHeader interface {
	Header
	// ExtFieldsCap returns the most entries Encode writes.
	ExtFieldsCap() int
}

// unsizedHeaderFields sizes the map of a header that is not a SizedHeader.
const unsizedHeaderFields = 16

// EncodeHeader returns a fresh extFields map holding h.
func EncodeHeader(h Header) map[string]string { return EncodeHeaderRoom(h, 0) }

// SignatureFields is how many extension fields signing adds (AccessKey, Signature).
const SignatureFields = 2

// EncodeHeaderRoom is EncodeHeader leaving room for room more fields, such as the
// SignatureFields a signed request gets after encoding: a map sized exactly for the header
// would grow (and rehash) when they are added.
func EncodeHeaderRoom(h Header, room int) map[string]string {
	n := unsizedHeaderFields
	if s, ok := h.(SizedHeader); ok {
		n = s.ExtFieldsCap()
	}
	m := make(map[string]string, n+room)
	h.Encode(m)
	return m
}

// FieldReader reads typed values out of an extFields map, or of a request's binary entries in
// place (Command.FieldReader), and keeps the first error.
type FieldReader struct {
	ext map[string]string
	raw string // Command.rawExt, when ext is nil
	at  int    // where the entry the last raw lookup found starts
	err error
}

// NewFieldReader reads from ext (which may be nil).
func NewFieldReader(ext map[string]string) *FieldReader { return &FieldReader{ext: ext} }

// Err returns the first *HeaderError met, or nil.
func (r *FieldReader) Err() error { return r.err }

func (r *FieldReader) fail(field, value, reason string) {
	if r.err == nil {
		r.err = &HeaderError{Field: field, Value: value, Reason: reason}
	}
}

func (r *FieldReader) lookup(key string) (string, bool) {
	if r.raw == "" {
		v, ok := r.ext[key]
		return v, ok
	}
	v, at, ok := rawExtLookup(r.raw, key, r.at)
	r.at = at
	return v, ok
}

func (r *FieldReader) value(key string, required bool) (string, bool) {
	v, ok := r.lookup(key)
	if (!ok || v == "") && required {
		r.fail(key, "", "null")
		return "", false
	}
	return v, ok && v != ""
}

// String returns the field's value; a required field must be non-empty.
func (r *FieldReader) String(key string, required bool) string {
	v, _ := r.value(key, required)
	return v
}

// Int64 returns the field parsed as a decimal int64 (0 when optional and absent).
func (r *FieldReader) Int64(key string, required bool) int64 {
	v, ok := r.value(key, required)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(key, v, "not an integer")
	}
	return n
}

// Int32 returns the field parsed as a decimal int32.
func (r *FieldReader) Int32(key string, required bool) int32 {
	v, ok := r.value(key, required)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		r.fail(key, v, "not a 32-bit integer")
	}
	return int32(n)
}

// Bool returns the field parsed as "true"/"false" (Java's Boolean.parseBoolean is lenient: any
// other text is false, and so is ours).
func (r *FieldReader) Bool(key string, required bool) bool {
	v, ok := r.value(key, required)
	return ok && (v == "true" || v == "TRUE" || v == "True")
}

// The Put helpers write numbers and bools in the forms RocketMQ's clients write and parse.

// PutInt64 stores a decimal int64.
func PutInt64(ext map[string]string, key string, v int64) { ext[key] = strconv.FormatInt(v, 10) }

// PutInt32 stores a decimal int32.
func PutInt32(ext map[string]string, key string, v int32) {
	ext[key] = strconv.FormatInt(int64(v), 10)
}

// PutBool stores "true" or "false".
func PutBool(ext map[string]string, key string, v bool) { ext[key] = strconv.FormatBool(v) }
