package protocol

// QueryMessageRequestHeader is the header of QUERY_MESSAGE (12), docs/protocol.md §5.10: messages of
// Topic whose KEYS contain Key (or whose UNIQ_KEY is Key) stored in [BeginTimestamp,
// EndTimestamp] ms. Every field but the unique-key flag is required.
type QueryMessageRequestHeader struct {
	Topic          string `ext:"topic,required"`
	Key            string `ext:"key,required"`
	MaxNum         int32  `ext:"maxNum,required"`
	BeginTimestamp int64  `ext:"beginTimestamp,required"`
	EndTimestamp   int64  `ext:"endTimestamp,required"`
	// UniqueKeyQuery is the extra key "_UNIQUE_KEY_QUERY" = "true" (RocketMQ MixAll
	// UNIQUE_MSG_QUERY_FLAG) that asks for messages by id (UNIQ_KEY) rather than by KEYS; the
	// broker then answers up to its default number of matches.
	UniqueKeyQuery bool `ext:"_UNIQUE_KEY_QUERY,omitempty"`
}

// QueryMessageResponseHeader answers QUERY_MESSAGE; the body is the matching stored records
// back to back (§9.1).
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64 `ext:"indexLastUpdateTimestamp,required"`
	IndexLastUpdatePhyoffset int64 `ext:"indexLastUpdatePhyoffset,required"`
}

// ViewMessageRequestHeader is the header of VIEW_MESSAGE_BY_ID (33): the CommitLog offset
// decoded from an offset message id (§9.5). The body of the answer is that one record.
type ViewMessageRequestHeader = OffsetHeader
