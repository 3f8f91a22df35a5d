// Package protocol holds the typed request and response headers of the RocketMQ 4.x remoting
// protocol shared by the broker, the name service and the clients, and the bodies they carry.
// Each header implements remoting.Header: Encode writes its fields into a Command's extFields,
// Decode reads them back and returns a *remoting.HeaderError naming the first missing or
// invalid required field.
//
// Field names are the Java field names of the RocketMQ 4.x header classes (part of the wire
// format; do not change them).
//
// # Adding a header
//
// A header is a struct with an ext tag on every field; go generate writes its Encode and
// Decode into headers_gen.go (internal/headergen), and a test fails when that file is stale.
// Fields are string, int32, int64 or bool, written in decimal or as "true"/"false":
//
//	type QueueHeader struct {
//		Topic      string `ext:"topic,required"`
//		QueueID    int32  `ext:"queueId,required"`
//		BrokerName string `ext:"bname,omitempty"`
//	}
//
// The tag is the extFields key, then options:
//
//   - required: Decode fails when the key is absent or empty (Java's @CFNotNull); without it
//     an absent key decodes as the zero value.
//   - omitempty: Encode leaves the key out when the value is "", 0 or false (Java leaves out
//     null fields). Without it the key is always written, as the Go client writes it.
//   - omitneg (integers): Encode leaves the key out when the value is negative, and Decode
//     reads an absent or empty key as -1.
//   - nonfalse (bools): Decode reads any value but empty or "false" as true.
//   - alias=Key: Decode reads Key when the key itself is absent (an older client's spelling).
//
// Decode reads the fields in declaration order, so the first bad field named in an error is the
// first in the struct. A header sent under a second key set is a defined type over the first,
// with a directive naming the tag that holds its keys (see SendMessageRequestHeaderV2). Two
// header types may not share a codec: the generator refuses them, declare one as an alias of
// the other.
package protocol

//go:generate go run ./internal/headergen/cmd/headergen
