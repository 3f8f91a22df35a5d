package producer

import (
	"bytes"
	"compress/zlib"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// prepared is a message (or batch) encoded once for all its attempts.
type prepared struct {
	topic      string // user topic
	wireTopic  string // with the namespace
	msgID      string // UNIQ_KEY (comma-joined for a batch)
	properties string
	body       []byte
	sysFlag    int32
	flag       int32
	batch      bool
}

// prepare encodes msg: a UNIQ_KEY unless the user set one, the properties string, the body
// zlib-compressed when it is large enough (sysFlag bit 0).
func (p *Producer) prepare(msg *Message) *prepared {
	pr := &prepared{topic: msg.Topic, wireTopic: p.wireTopic(msg.Topic), body: msg.Body, flag: msg.Flag}
	uniq := msg.uniqKeyOf()
	gen := ""
	if uniq == "" {
		uniq = newUniqID()
		gen = uniq
	}
	pr.msgID = uniq
	var sb strings.Builder
	sb.Grow(64 + len(msg.Tags) + 16*len(msg.Properties))
	msg.appendProperties(&sb, gen)
	pr.properties = sb.String()
	if p.cfg.compressOver > 0 && len(msg.Body) >= p.cfg.compressOver {
		if z, ok := p.compress(msg.Body); ok {
			pr.body = z
			pr.sysFlag |= message.FlagCompressed
		}
	}
	return pr
}

// prepareBatch encodes msgs as one SEND_BATCH_MESSAGE body (docs/protocol.md §9.6). Unlike the
// official Go client, every element gets its own UNIQ_KEY (as Java's MessageBatch does), so
// consumers see stable client ids; elements are never compressed.
func (p *Producer) prepareBatch(msgs []*Message) *prepared {
	pr := &prepared{topic: msgs[0].Topic, wireTopic: p.wireTopic(msgs[0].Topic), batch: true}
	ids := make([]string, 0, len(msgs))
	size := 0
	for _, m := range msgs {
		size += 22 + len(m.Body) + 96
	}
	body := make([]byte, 0, size)
	var sb strings.Builder
	for _, m := range msgs {
		uniq := m.uniqKeyOf()
		gen := ""
		if uniq == "" {
			uniq = newUniqID()
			gen = uniq
		}
		ids = append(ids, uniq)
		sb.Reset()
		m.appendProperties(&sb, gen)
		body = message.AppendBatchElement(body, m.Flag, m.Body, sb.String())
	}
	pr.body = body
	pr.msgID = strings.Join(ids, ",")
	return pr
}

var zlibPools [12]sync.Pool // by level+2

func (p *Producer) compress(body []byte) ([]byte, bool) {
	pool := &zlibPools[p.cfg.compressLevel+2]
	var buf bytes.Buffer
	buf.Grow(len(body)/2 + 64)
	w, _ := pool.Get().(*zlib.Writer)
	if w == nil {
		var err error
		if w, err = zlib.NewWriterLevel(&buf, p.cfg.compressLevel); err != nil {
			return nil, false
		}
	} else {
		w.Reset(&buf)
	}
	_, err := w.Write(body)
	if err == nil {
		err = w.Close()
	}
	pool.Put(w)
	if err != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// command builds the request of one attempt: SEND_MESSAGE_V2 (310) for a single message, as
// Java clients send it, or SEND_BATCH_MESSAGE (320), both with the short-key header.
func (p *Producer) command(q MessageQueue, pr *prepared) *remoting.Command {
	h := protocol.SendMessageRequestHeader{
		ProducerGroup:         p.wireGroup,
		Topic:                 pr.wireTopic,
		DefaultTopic:          p.cfg.createTopicKey,
		DefaultTopicQueueNums: int32(p.cfg.topicQueueNums),
		QueueID:               int32(q.QueueID),
		SysFlag:               pr.sysFlag,
		BornTimestamp:         time.Now().UnixMilli(),
		Flag:                  pr.flag,
		Properties:            pr.properties,
		MaxReconsumeTimes:     -1,
		Batch:                 pr.batch,
		BrokerName:            q.BrokerName,
	}
	code := remoting.SendMessageV2
	if pr.batch {
		code = remoting.SendBatchMessage
	}
	cmd := remoting.NewRequest(code, remoting.EncodeHeader((*protocol.SendMessageRequestHeaderV2)(&h)), pr.body)
	cmd.Serialize = remoting.SerializeRocketMQ
	return cmd
}

// result reads a send response (docs/protocol.md §4.1): the four success codes, else a
// *remoting.ResponseError.
func (p *Producer) result(resp *remoting.Command, q MessageQueue, pr *prepared) (*SendResult, error) {
	var st SendStatus
	switch resp.Code {
	case remoting.Success:
		st = SendOK
	case remoting.FlushDiskTimeout:
		st = SendFlushDiskTimeout
	case remoting.FlushSlaveTimeout:
		st = SendFlushSlaveTimeout
	case remoting.SlaveNotAvailable:
		st = SendSlaveNotAvailable
	default:
		return nil, &remoting.ResponseError{Code: resp.Code, Remark: resp.Remark}
	}
	var h protocol.SendMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	q.QueueID = int(h.QueueID)
	return &SendResult{Status: st, MsgID: pr.msgID, OffsetMsgID: h.MsgID, Queue: q, QueueOffset: h.QueueOffset,
		RegionID: h.MsgRegion, TransactionID: h.TransactionID, TraceOn: h.TraceOn}, nil
}

func (p *Producer) wireTopic(topic string) string {
	if p.cfg.namespace == "" || strings.HasPrefix(topic, p.cfg.namespace+"%") {
		return topic
	}
	return p.cfg.namespace + "%" + topic
}

func (p *Producer) userTopic(wire string) string {
	if p.cfg.namespace == "" {
		return wire
	}
	return strings.TrimPrefix(wire, p.cfg.namespace+"%")
}
