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

// Step 4 of a send (send.go): the request. What does not depend on the queue (UNIQ_KEY,
// properties, body, compression) is encoded once per send, so a retry re-sends the same bytes
// under the same id; the header, which names the queue, is built per attempt.

// encoded is a message (or batch) encoded once for all its attempts.
type encoded struct {
	msgID      string // UNIQ_KEY (comma-joined for a batch)
	properties string
	body       []byte
	sysFlag    int32
	flag       int32
	batch      bool
	// reply is a reply to a request (MSG_TYPE reply): it goes with SEND_REPLY_MESSAGE_V2, which
	// the broker pushes to the requester, as the official clients send it.
	reply bool
}

// encode encodes msg: a UNIQ_KEY unless the user set one, the properties string, the body
// zlib-compressed when it is large enough (sysFlag bit 0).
func (p *Producer) encode(msg *Message) encoded {
	e := encoded{body: msg.Body, flag: msg.Flag, reply: msg.Properties[message.PropertyMsgType] == replyMessageType}
	e.msgID, e.properties = encodeProperties(msg)
	if p.cfg.compressOver > 0 && len(msg.Body) >= p.cfg.compressOver {
		if z, ok := p.compress(msg.Body); ok {
			e.body = z
			e.sysFlag |= message.FlagCompressed
		}
	}
	return e
}

// sharedMsgIDMaxProperties is the longest properties string a generated UNIQ_KEY is cut
// from. The id outlives the send in its SendResult and keeps its whole string reachable, so
// it is copied out of longer ones.
const sharedMsgIDMaxProperties = 256

// encodeProperties returns msg's UNIQ_KEY and its properties string. A generated id is written
// straight into the string, last, as appendProperties would write it, and the id returned is
// cut from there: one allocation for both.
func encodeProperties(msg *Message) (msgID, properties string) {
	var sb strings.Builder
	sb.Grow(64 + len(msg.Tags) + 16*len(msg.Properties))
	if uniq := msg.uniqKeyOf(); uniq != "" {
		msg.appendProperties(&sb, "")
		return uniq, sb.String()
	}
	if _, set := msg.Properties[message.PropertyUniqKey]; set {
		// Set empty: appendProperties writes it as it is, and the send still gets an id.
		msg.appendProperties(&sb, "")
		return newUniqID(), sb.String()
	}
	msg.appendProperties(&sb, "")
	sb.WriteString(message.PropertyUniqKey)
	sb.WriteByte(message.NameValueSeparator)
	var id [uniqIDBytes]byte
	sb.Write(appendUniqID(id[:0]))
	sb.WriteByte(message.PropertySeparator)
	properties = sb.String()
	msgID = properties[len(properties)-1-uniqIDBytes : len(properties)-1]
	if len(properties) > sharedMsgIDMaxProperties {
		msgID = strings.Clone(msgID)
	}
	return msgID, properties
}

// encodeBatch encodes msgs as one SEND_BATCH_MESSAGE body (docs/protocol.md §9.6). Unlike the
// official Go client, every element gets its own UNIQ_KEY (as Java's MessageBatch does), so
// consumers see stable client ids; elements are never compressed.
func (p *Producer) encodeBatch(msgs []*Message) encoded {
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
	return encoded{msgID: strings.Join(ids, ","), body: body, batch: true}
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

// request builds the request of one attempt on q: SEND_MESSAGE_V2 (310) for a single message,
// as Java clients send it, or SEND_BATCH_MESSAGE (320), both with the short-key header.
func (s *send) request(q MessageQueue) *remoting.Command {
	h := protocol.SendMessageRequestHeader{
		ProducerGroup:         s.p.wireGroup,
		Topic:                 s.wireTopic,
		DefaultTopic:          s.p.cfg.createTopicKey,
		DefaultTopicQueueNums: int32(s.p.cfg.topicQueueNums),
		QueueID:               int32(q.QueueID),
		SysFlag:               s.msg.sysFlag,
		BornTimestamp:         time.Now().UnixMilli(),
		Flag:                  s.msg.flag,
		Properties:            s.msg.properties,
		MaxReconsumeTimes:     -1,
		Batch:                 s.msg.batch,
		BrokerName:            q.BrokerName,
	}
	code := remoting.SendMessageV2
	switch {
	case s.msg.batch:
		code = remoting.SendBatchMessage
	case s.msg.reply:
		code = remoting.SendReplyMessageV2 // the same one-letter header
	}
	var cmd *remoting.Command
	if _, ok := s.p.tr.(remoting.FieldsTransport); ok && s.p.headerRoom == 0 {
		// The encoder writes the fields straight into the frame: no map per send.
		cmd = remoting.NewRequestFields(code, (*protocol.SendMessageRequestHeaderV2)(&h), s.msg.body)
	} else {
		// Signing, or a transport that reads the map: a map, with room for the signature.
		cmd = remoting.NewRequest(code, remoting.EncodeHeaderRoom((*protocol.SendMessageRequestHeaderV2)(&h), s.p.headerRoom), s.msg.body)
	}
	cmd.Serialize = remoting.SerializeRocketMQ
	return cmd
}
