package pop

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/jsonenc"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/storage"
)

// Names of the revive topic, its group and its record tags (PopAckConstants).
const (
	reviveTopicPrefix = "rmq_sys_REVIVE_LOG_"
	reviveGroup       = "CID_RMQ_SYS_REVIVE_GROUP"
	ckTag             = "ck"
	ackTag            = "ack"
	batchAckTag       = "bAck"
)

// maxPopNums is 5.x's cap on maxMsgNums; a checkpoint's acks fit a uint32 bitmap.
const maxPopNums = 32

// ckRecord is a checkpoint as stored in the revive topic. Keys follow PopCheckPoint's JSON
// names; offsets are stored as differences from the start offset, as there.
type ckRecord struct {
	StartOffset   int64   `json:"so"`
	PopTime       int64   `json:"pt"`
	InvisibleTime int64   `json:"it"`
	QueueID       int32   `json:"q"`
	Topic         string  `json:"t"`
	Group         string  `json:"c"`
	Diffs         []int32 `json:"d"`
	BrokerName    string  `json:"bn"`
}

// ackRecord is an ack as stored in the revive topic (AckMsg's JSON names).
type ackRecord struct {
	AckOffset   int64  `json:"ao"`
	StartOffset int64  `json:"so"`
	Group       string `json:"c"`
	Topic       string `json:"t"`
	QueueID     int32  `json:"q"`
	PopTime     int64  `json:"pt"`
	BrokerName  string `json:"bn"`
}

// appendJSON appends r as encoding/json writes it (byte for byte for the names a broker
// accepts, which need no HTML escapes): an ack is the revive record written once per
// acknowledged message, and reflection was a third of its cost.
func (r *ackRecord) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"ao":`...)
	dst = strconv.AppendInt(dst, r.AckOffset, 10)
	dst = append(dst, `,"so":`...)
	dst = strconv.AppendInt(dst, r.StartOffset, 10)
	dst = append(dst, `,"c":`...)
	dst = jsonenc.AppendString(dst, r.Group)
	dst = append(dst, `,"t":`...)
	dst = jsonenc.AppendString(dst, r.Topic)
	dst = append(dst, `,"q":`...)
	dst = strconv.AppendInt(dst, int64(r.QueueID), 10)
	dst = append(dst, `,"pt":`...)
	dst = strconv.AppendInt(dst, r.PopTime, 10)
	dst = append(dst, `,"bn":`...)
	dst = jsonenc.AppendString(dst, r.BrokerName)
	return append(dst, '}')
}

// batchAckRecord is several acks of one checkpoint as stored in the revive topic (BatchAckMsg:
// AckMsg's names, ackOffset -1, and the offsets in "aol").
type batchAckRecord struct {
	ackRecord
	AckOffsets []int64 `json:"aol"`
}

// appendJSON appends r as encoding/json writes it (see ackRecord's).
func (r *batchAckRecord) appendJSON(dst []byte) []byte {
	dst = r.ackRecord.appendJSON(dst)
	dst = append(dst[:len(dst)-1], `,"aol":`...)
	if r.AckOffsets == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, o := range r.AckOffsets {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, o, 10)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendJSON appends r as encoding/json writes it (see ackRecord's): one is written per pop.
func (r *ckRecord) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"so":`...)
	dst = strconv.AppendInt(dst, r.StartOffset, 10)
	dst = append(dst, `,"pt":`...)
	dst = strconv.AppendInt(dst, r.PopTime, 10)
	dst = append(dst, `,"it":`...)
	dst = strconv.AppendInt(dst, r.InvisibleTime, 10)
	dst = append(dst, `,"q":`...)
	dst = strconv.AppendInt(dst, int64(r.QueueID), 10)
	dst = append(dst, `,"t":`...)
	dst = jsonenc.AppendString(dst, r.Topic)
	dst = append(dst, `,"c":`...)
	dst = jsonenc.AppendString(dst, r.Group)
	dst = append(dst, `,"d":`...)
	if r.Diffs == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, d := range r.Diffs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(d), 10)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"bn":`...)
	dst = jsonenc.AppendString(dst, r.BrokerName)
	return append(dst, '}')
}

// jsonRecord is a revive record that writes its own JSON.
type jsonRecord interface {
	appendJSON(dst []byte) []byte
}

// errNotStored is a revive record the store did not take.
var errNotStored = errors.New("pop: revive record not stored")

// putRecord appends v to revive queue qid under tag and returns its queue offset. Under
// SYNC_FLUSH it returns once the record is on disk.
func (s *Service) putRecord(qid int32, tag string, v jsonRecord) (int64, error) {
	body := v.appendJSON(make([]byte, 0, 256))
	props := message.PropertyTags + string(message.NameValueSeparator) + tag + string(message.PropertySeparator)
	m := &storage.Message{Topic: s.reviveTopic, QueueID: qid, Body: body, Properties: props,
		BornTimestamp: nowMillis(), BornHost: s.b.Messages().StoreHost(), StoreHost: s.b.Messages().StoreHost(),
		BodyCRC: message.BodyCRC(body)}
	r, err := s.b.Messages().Put(m)
	if err != nil || !broker.PutStored(r.Status) {
		return 0, fmt.Errorf("%w: %s: %v", errNotStored, r.Status, err)
	}
	return r.QueueOffset, nil
}

// recordTag reads the TAGS property of a revive record.
func recordTag(rec *message.Record) string {
	v, _ := message.PropertyValue(rec.Properties, message.PropertyTags)
	return string(v)
}

// ckOf builds the checkpoint a ck record describes, or an error when the record is not one
// this service could have written.
func ckOf(r *ckRecord, reviveQid int32, recOffset int64) (*checkpoint, error) {
	if len(r.Diffs) == 0 || len(r.Diffs) > maxPopNums || r.InvisibleTime <= 0 || r.StartOffset < 0 {
		return nil, fmt.Errorf("checkpoint with %d offsets, invisible time %d, start %d",
			len(r.Diffs), r.InvisibleTime, r.StartOffset)
	}
	c := &checkpoint{key: ckKey{group: r.Group, topic: r.Topic, queueID: r.QueueID, start: r.StartOffset,
		popTime: r.PopTime}, reviveQid: reviveQid, invisible: r.InvisibleTime, recOffset: recOffset}
	for _, d := range r.Diffs {
		if d < 0 {
			return nil, fmt.Errorf("checkpoint offset difference %d", d)
		}
		c.offsets = append(c.offsets, r.StartOffset+int64(d))
	}
	return c, nil
}

// record is the ck record of c.
func (c *checkpoint) record(brokerName string) *ckRecord {
	r := &ckRecord{StartOffset: c.key.start, PopTime: c.key.popTime, InvisibleTime: c.invisible,
		QueueID: c.key.queueID, Topic: c.key.topic, Group: c.key.group, BrokerName: brokerName,
		Diffs: make([]int32, len(c.offsets))}
	for i, o := range c.offsets {
		r.Diffs[i] = int32(o - c.key.start)
	}
	return r
}
