package dashboard

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/trace"
)

// Bounds of a trace lookup: the trace messages asked for (RocketMQ's queryMsgTraceById asks
// for 64) and the records listed.
const (
	maxTraceMessages = 64
	maxTraceRecords  = 256
)

// traceRow is one trace record of a message: its send (Pub) or one consumption (SubBefore,
// SubAfter) by a group.
type traceRow struct {
	Type        string `json:"type"`
	Group       string `json:"group"`
	ClientHost  string `json:"clientHost"`
	Time        int64  `json:"time"` // unix ms, 0 when the record has none
	CostMillis  int64  `json:"costMs"`
	Success     bool   `json:"success"`
	Topic       string `json:"topic,omitempty"`
	Tags        string `json:"tags,omitempty"`
	Keys        string `json:"keys,omitempty"`
	StoreHost   string `json:"storeHost,omitempty"`
	OffsetMsgID string `json:"offsetMsgId,omitempty"`
	RetryTimes  int    `json:"retryTimes"`
	BodyLength  int    `json:"bodyLength"`
	RequestID   string `json:"requestId,omitempty"`
}

type traceBody struct {
	MsgID     string     `json:"msgId"`
	Topic     string     `json:"traceTopic"`
	Records   []traceRow `json:"records"`
	Truncated bool       `json:"truncated"`
	// Undecodable counts trace messages with a record the decoder could not read; what came
	// before it is listed, as RocketMQ's decoder keeps it.
	Undecodable int `json:"undecodable"`
}

// trace serves GET /api/trace?id=[&topic=]: the trace records of a message id (the unique key
// a producer returns, or the offset message id) from the trace topic, RMQ_SYS_TRACE_TOPIC
// unless topic names another, where tracing producers and consumers (ours and the official
// clients, WithTrace) write them keyed by the traced ids: RocketMQ's dashboard's message trace
// and mqadmin queryMsgTraceById.
func (s *Server) trace(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, topic := strings.TrimSpace(q.Get("id")), strings.TrimSpace(q.Get("topic"))
	if !validMsgID(id) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("id: want a message id, at most %d hex digits", maxMsgIDBytes))
		return
	}
	if topic == "" {
		topic = trace.DefaultTopic
	} else if err := names.CheckTopic(topic); err != nil {
		writeError(w, http.StatusBadRequest, "topic: "+err.Error())
		return
	}
	msgs, err := s.src.QueryMessageByKey(r.Context(), topic, id, maxTraceMessages, time.UnixMilli(0), time.Now().Add(time.Minute))
	switch {
	case isTopicNotExist(err):
		writeError(w, http.StatusNotFound, "trace topic "+topic+" does not exist: no producer or consumer has written traces")
		return
	case err != nil:
		s.upstream(w, r, err)
		return
	}
	body := traceBody{MsgID: id, Topic: topic, Records: []traceRow{}}
	for _, m := range msgs[:min(len(msgs), maxTraceMessages)] {
		records, err := trace.Decode(string(m.Body))
		if err != nil {
			body.Undecodable++
		}
		for _, c := range records {
			b := c.Beans[0]
			if !strings.EqualFold(b.MsgID, id) && !strings.EqualFold(b.OffsetMsgID, id) {
				continue // a trace message carries the records of a batch
			}
			if len(body.Records) == maxTraceRecords {
				body.Truncated = true
				break
			}
			row := traceRow{Type: string(c.Type), Group: truncate(c.Group, names.MaxGroupBytes), Time: c.TimeStamp,
				CostMillis: c.CostTime, Success: c.Success, Topic: truncate(b.Topic, names.MaxTopicBytes),
				Tags: truncate(b.Tags, maxKeyBytes), Keys: truncate(b.Keys, maxKeyBytes), StoreHost: truncate(b.StoreHost, maxAddrBytes),
				OffsetMsgID: truncate(b.OffsetMsgID, maxMsgIDBytes), RetryTimes: b.RetryTimes, BodyLength: b.BodyLength,
				RequestID: truncate(c.RequestID, maxMsgIDBytes), ClientHost: truncate(b.ClientHost, maxAddrBytes)}
			if row.ClientHost == "" && m.BornHost.IsValid() {
				row.ClientHost = m.BornHost.Addr().String() // the trace message's sender wrote the record
			}
			body.Records = append(body.Records, row)
		}
	}
	if len(body.Records) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no trace of message %s in %s: producers and consumers write traces only when started with tracing on (WithTrace)", id, topic))
		return
	}
	// The send first, then each consumption in time; a SubAfter without a time follows its SubBefore.
	order := map[string]int{string(trace.Pub): 0, string(trace.SubBefore): 1, string(trace.SubAfter): 2}
	slices.SortStableFunc(body.Records, func(a, b traceRow) int {
		if a.Type == string(trace.Pub) || b.Type == string(trace.Pub) {
			return cmp.Compare(order[a.Type], order[b.Type])
		}
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.RequestID, b.RequestID), cmp.Compare(order[a.Type], order[b.Type]))
	})
	writeJSON(w, http.StatusOK, body)
}
