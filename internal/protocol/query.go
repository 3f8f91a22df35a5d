package protocol

import "github.com/mqgo/mq/remoting"

// UniqueKeyQueryField is the extra extFields key ("_UNIQUE_KEY_QUERY" = "true") that marks a
// QUERY_MESSAGE by message id (UNIQ_KEY) rather than by KEYS (RocketMQ MixAll
// UNIQUE_MSG_QUERY_FLAG). The broker then answers up to its default number of matches.
const UniqueKeyQueryField = "_UNIQUE_KEY_QUERY"

// QueryMessageRequestHeader is the header of QUERY_MESSAGE (12), docs/protocol.md §5.10: messages of
// Topic whose KEYS contain Key (or whose UNIQ_KEY is Key) stored in [BeginTimestamp,
// EndTimestamp] ms.
type QueryMessageRequestHeader struct {
	Topic          string
	Key            string
	MaxNum         int32
	BeginTimestamp int64
	EndTimestamp   int64
	// UniqueKeyQuery is sent as UniqueKeyQueryField.
	UniqueKeyQuery bool
}

// Encode implements remoting.Header.
func (h *QueryMessageRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["key"] = h.Key
	remoting.PutInt32(ext, "maxNum", h.MaxNum)
	remoting.PutInt64(ext, "beginTimestamp", h.BeginTimestamp)
	remoting.PutInt64(ext, "endTimestamp", h.EndTimestamp)
	if h.UniqueKeyQuery {
		ext[UniqueKeyQueryField] = "true"
	}
}

// Decode implements remoting.Header. Every field but the unique-key flag is required.
func (h *QueryMessageRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Topic = r.String("topic", true)
	h.Key = r.String("key", true)
	h.MaxNum = r.Int32("maxNum", true)
	h.BeginTimestamp = r.Int64("beginTimestamp", true)
	h.EndTimestamp = r.Int64("endTimestamp", true)
	h.UniqueKeyQuery = r.Bool(UniqueKeyQueryField, false)
	return r.Err()
}

// QueryMessageResponseHeader answers QUERY_MESSAGE; the body is the matching stored records
// back to back (§9.1).
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64
}

// Encode implements remoting.Header.
func (h *QueryMessageResponseHeader) Encode(ext map[string]string) {
	remoting.PutInt64(ext, "indexLastUpdateTimestamp", h.IndexLastUpdateTimestamp)
	remoting.PutInt64(ext, "indexLastUpdatePhyoffset", h.IndexLastUpdatePhyoffset)
}

// Decode implements remoting.Header.
func (h *QueryMessageResponseHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.IndexLastUpdateTimestamp = r.Int64("indexLastUpdateTimestamp", true)
	h.IndexLastUpdatePhyoffset = r.Int64("indexLastUpdatePhyoffset", true)
	return r.Err()
}

// ViewMessageRequestHeader is the header of VIEW_MESSAGE_BY_ID (33): the CommitLog offset
// decoded from an offset message id (§9.5). The body of the answer is that one record.
type ViewMessageRequestHeader struct {
	Offset int64
}

// Encode implements remoting.Header.
func (h *ViewMessageRequestHeader) Encode(ext map[string]string) {
	remoting.PutInt64(ext, "offset", h.Offset)
}

// Decode implements remoting.Header.
func (h *ViewMessageRequestHeader) Decode(ext map[string]string) error {
	r := remoting.NewFieldReader(ext)
	h.Offset = r.Int64("offset", true)
	return r.Err()
}

var (
	_ remoting.Header = (*QueryMessageRequestHeader)(nil)
	_ remoting.Header = (*QueryMessageResponseHeader)(nil)
	_ remoting.Header = (*ViewMessageRequestHeader)(nil)
)
