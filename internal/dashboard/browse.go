package dashboard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
)

// Bounds of a browse: how many queues are read, how many messages listed, how many pulls one
// queue may take (a pull returns at most admin.MaxPullNums messages and, as RocketMQ's broker,
// about 256 KiB; messages stored before begin are skipped).
const (
	maxBrowseQueues   = 64
	defaultBrowseRows = 32
	maxBrowseRows     = 128
	maxPullsPerQueue  = 16
)

// messageRow is a message in a list: everything but its body and properties, which the
// message lookup shows (GET /api/message?id=<offsetMsgId>).
type messageRow struct {
	MsgID          string   `json:"msgId"`
	OffsetMsgID    string   `json:"offsetMsgId"`
	Topic          string   `json:"topic"`
	Tags           string   `json:"tags"`
	Keys           []string `json:"keys"`
	BrokerName     string   `json:"brokerName"`
	QueueID        int      `json:"queueId"`
	QueueOffset    int64    `json:"queueOffset"`
	StoreTime      int64    `json:"storeTime"` // unix ms
	BornTime       int64    `json:"bornTime"`
	BornHost       string   `json:"bornHost"`
	BodySize       int      `json:"bodySize"`
	ReconsumeTimes int32    `json:"reconsumeTimes"`
	// OriginTopic is where a retried or dead-lettered message was first sent (RETRY_TOPIC).
	OriginTopic string `json:"originTopic,omitempty"`
}

func rowOf(m *consumer.Message) messageRow {
	v := messageRow{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Tags: truncate(m.Tags, maxKeyBytes),
		Keys: []string{}, BrokerName: m.Queue.BrokerName, QueueID: m.Queue.QueueID, QueueOffset: m.QueueOffset,
		BodySize: len(m.Body), ReconsumeTimes: m.ReconsumeTimes, OriginTopic: m.Properties[message.PropertyRetryTopic]}
	for _, k := range m.Keys[:min(len(m.Keys), 16)] {
		v.Keys = append(v.Keys, truncate(k, maxKeyBytes))
	}
	v.StoreTime, v.BornTime = unixMillis(m.StoreTime), unixMillis(m.BornTime)
	if m.BornHost.IsValid() {
		v.BornHost = m.BornHost.String()
	}
	return v
}

// browseQuery is what a browse reads: the messages of topic stored in [begin, end] (unix ms;
// end 0: no end), the first max by store time.
type browseQuery struct {
	topic      string
	begin, end int64
	max        int
}

type browseBody struct {
	Topic    string       `json:"topic"`
	Begin    int64        `json:"begin"`
	End      int64        `json:"end"`
	Messages []messageRow `json:"messages"`
	// Truncated says there are more messages in the window than listed: narrow it, or begin
	// at the last one's store time.
	Truncated       bool `json:"truncated"`
	Queues          int  `json:"queues"`
	QueuesTruncated bool `json:"queuesTruncated"`
	// Errors are the queues that could not be read, with why.
	Errors []string `json:"errors"`
	// Exists is false for a dead-letter topic not created yet (GET /api/dlq?group=).
	Exists bool `json:"exists"`
}

// parseBrowse reads begin, end and max of a browse from q; begin defaults to defBegin.
func parseBrowse(q url.Values, defBegin int64) (browseQuery, error) {
	bq := browseQuery{begin: defBegin, max: defaultBrowseRows}
	var err error
	if v := q.Get("begin"); v != "" {
		if bq.begin, err = parseMillis("begin", v); err != nil {
			return bq, err
		}
	}
	if v := q.Get("end"); v != "" {
		if bq.end, err = parseMillis("end", v); err != nil {
			return bq, err
		}
		if bq.end < bq.begin {
			return bq, errors.New("end: before begin")
		}
	}
	if v := q.Get("max"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxBrowseRows {
			return bq, fmt.Errorf("max: want 1 to %d messages", maxBrowseRows)
		}
		bq.max = n
	}
	return bq, nil
}

// parseMillis reads a unix-millisecond time of a query string.
func parseMillis(name, v string) (int64, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > maxResetMillis {
		return 0, fmt.Errorf("%s: want unix milliseconds up to year 9999", name)
	}
	return ms, nil
}

// browse serves GET /api/browse?topic=&begin=&end=&max=: the first messages of a topic stored
// from begin on (RocketMQ's dashboard's query by topic and time: each queue's offset at begin
// by SEARCH_OFFSET_BY_TIMESTAMP, then pulls from there).
func (s *Server) browse(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	topic := strings.TrimSpace(q.Get("topic"))
	if err := names.CheckTopic(topic); err != nil {
		writeError(w, http.StatusBadRequest, "topic: "+err.Error())
		return
	}
	if q.Get("begin") == "" {
		writeError(w, http.StatusBadRequest, "begin: give the time to browse from (unix milliseconds)")
		return
	}
	bq, err := parseBrowse(q, 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	bq.topic = topic
	body, err := s.browseTopic(r.Context(), bq)
	switch {
	case isTopicNotExist(err):
		writeError(w, http.StatusNotFound, "topic "+topic+" does not exist")
	case err != nil:
		s.upstream(w, r, err)
	default:
		writeJSON(w, http.StatusOK, body)
	}
}

func isTopicNotExist(err error) bool {
	var re *remoting.ResponseError
	return errors.As(err, &re) && re.Code == remoting.TopicNotExist
}

// browseTopic reads each queue of bq.topic (at most maxBrowseQueues) from its offset at
// bq.begin, up to bq.max messages each, and keeps the first bq.max of all by store time.
func (s *Server) browseTopic(ctx context.Context, bq browseQuery) (*browseBody, error) {
	stats, err := s.src.TopicStats(ctx, bq.topic)
	if err != nil {
		return nil, err
	}
	queues := slices.SortedFunc(maps.Keys(stats), compareQueues)
	body := &browseBody{Topic: bq.topic, Begin: bq.begin, End: bq.end, Queues: len(queues), Exists: true,
		Messages: []messageRow{}, Errors: []string{}}
	if len(queues) > maxBrowseQueues {
		queues, body.QueuesTruncated = queues[:maxBrowseQueues], true
	}
	rows := make([][]messageRow, len(queues))
	full := make([]bool, len(queues))
	errs := make([]error, len(queues))
	forEach(ctx, len(queues), func(ctx context.Context, i int) {
		rows[i], full[i], errs[i] = s.readQueue(ctx, queues[i], stats[queues[i]], bq)
	})
	for i := range queues {
		body.Messages = append(body.Messages, rows[i]...)
		body.Truncated = body.Truncated || full[i]
		if errs[i] != nil {
			body.Errors = append(body.Errors, truncate(fmt.Sprintf("%s/%d: %v", queues[i].BrokerName, queues[i].QueueID, errs[i]), errorTextBytes))
		}
	}
	slices.SortFunc(body.Messages, func(a, b messageRow) int {
		return cmp.Or(cmp.Compare(a.StoreTime, b.StoreTime), cmp.Compare(a.BrokerName, b.BrokerName),
			cmp.Compare(a.QueueID, b.QueueID), cmp.Compare(a.QueueOffset, b.QueueOffset))
	})
	if len(body.Messages) > bq.max {
		body.Messages, body.Truncated = body.Messages[:bq.max], true
	}
	return body, nil
}

func compareQueues(a, b admin.MessageQueue) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.QueueID, b.QueueID))
}

// readQueue returns the first bq.max messages of mq stored in bq's window, and whether the
// window holds more.
func (s *Server) readQueue(ctx context.Context, mq admin.MessageQueue, off admin.TopicOffset, bq browseQuery) ([]messageRow, bool, error) {
	if off.MaxOffset <= off.MinOffset || bq.begin > 0 && !off.LastUpdate.IsZero() && off.LastUpdate.UnixMilli() < bq.begin {
		return nil, false, nil // empty, or nothing stored since begin
	}
	offset := off.MinOffset
	if bq.begin > 0 {
		var err error
		if offset, err = s.src.SearchOffset(ctx, mq, time.UnixMilli(bq.begin)); err != nil {
			return nil, false, err
		}
		offset = max(offset, off.MinOffset)
	}
	var rows []messageRow
	for pulls := 0; pulls < maxPullsPerQueue && offset < off.MaxOffset; pulls++ {
		msgs, next, err := s.src.PullMessages(ctx, mq, offset, min(bq.max+1-len(rows), admin.MaxPullNums))
		if err != nil {
			return rows, false, err
		}
		for _, m := range msgs {
			at := m.StoreTime.UnixMilli()
			if at < bq.begin {
				continue
			}
			if bq.end > 0 && at > bq.end {
				return rows, false, nil
			}
			if len(rows) == bq.max {
				return rows, true, nil
			}
			rows = append(rows, rowOf(m))
		}
		if next <= offset {
			break
		}
		offset = next
	}
	return rows, false, nil
}

type dlqGroup struct {
	Group    string `json:"group"`
	Topic    string `json:"topic"`
	Messages int64  `json:"messages"`
	LastPut  int64  `json:"lastPut"` // unix ms, 0 = never
	Error    string `json:"error,omitempty"`
}

type dlqGroupsBody struct {
	Groups    []dlqGroup `json:"groups"`
	Truncated bool       `json:"truncated"`
}

// dlq serves GET /api/dlq: without group, the groups with a dead-letter topic and how many
// messages it holds; with group (and begin, end, max as a browse), the messages of
// %DLQ%<group>, oldest first. A group without one yet has an empty list, as RocketMQ's
// dashboard answers.
func (s *Server) dlq(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ctx := r.Context()
	if !q.Has("group") {
		s.dlqGroups(w, r)
		return
	}
	group := strings.TrimSpace(q.Get("group"))
	if err := names.CheckGroup(group); err != nil {
		writeError(w, http.StatusBadRequest, "group: "+err.Error())
		return
	}
	topic := names.DLQPrefix + group
	if err := names.CheckTopic(topic); err != nil {
		writeError(w, http.StatusBadRequest, "group: its dead-letter topic: "+err.Error())
		return
	}
	bq, err := parseBrowse(q, 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	bq.topic = topic
	body, err := s.browseTopic(ctx, bq)
	switch {
	case isTopicNotExist(err):
		writeJSON(w, http.StatusOK, &browseBody{Topic: topic, Begin: bq.begin, End: bq.end, Messages: []messageRow{}, Errors: []string{}})
	case err != nil:
		s.upstream(w, r, err)
	default:
		writeJSON(w, http.StatusOK, body)
	}
}

func (s *Server) dlqGroups(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := s.src.TopicList(ctx)
	if err != nil {
		s.upstream(w, r, err)
		return
	}
	body := dlqGroupsBody{Groups: []dlqGroup{}}
	for _, t := range slices.Sorted(slices.Values(list)) {
		group, ok := strings.CutPrefix(t, names.DLQPrefix)
		if !ok || group == "" {
			continue
		}
		if len(body.Groups) == maxTopics {
			body.Truncated = true
			break
		}
		body.Groups = append(body.Groups, dlqGroup{Group: group, Topic: t})
	}
	forEach(ctx, len(body.Groups), func(ctx context.Context, i int) {
		g := &body.Groups[i]
		stats, err := s.src.TopicStats(ctx, g.Topic)
		if err != nil {
			g.Error = truncate(err.Error(), errorTextBytes)
			return
		}
		for _, off := range stats {
			if off.MaxOffset > off.MinOffset {
				g.Messages += off.MaxOffset - off.MinOffset
			}
			g.LastPut = max(g.LastPut, unixMillis(off.LastUpdate))
		}
	})
	writeJSON(w, http.StatusOK, body)
}

type resendRequest struct {
	Group    string `json:"group"`
	MsgID    string `json:"msgId"` // the dead letter's offset message id
	ClientID string `json:"clientId"`
}

type resendBody struct {
	MsgID         string `json:"msgId"`
	ClientID      string `json:"clientId"`
	ConsumeResult string `json:"consumeResult"` // CR_SUCCESS, CR_LATER, ...
	Remark        string `json:"remark"`
	SpentMillis   int64  `json:"spentMs"`
}

// maxClientIDBytes bounds a client id in a request; RocketMQ's are ip@instance.
const maxClientIDBytes = 255

// resend serves POST /api/dlq/resend, RocketMQ dashboard's re-send of a dead letter: a
// consumer of the group (the one named, else the first online) runs its listener on the
// message through CONSUME_MESSAGE_DIRECTLY, and answers how it went. Nothing is stored again
// and no offset moves; the message must be in the group's dead-letter topic. A write:
// guardAPI checked the token.
func (s *Server) resend(w http.ResponseWriter, r *http.Request) {
	var req resendRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if err := names.CheckGroup(req.Group); err != nil {
		writeError(w, http.StatusBadRequest, "group: "+err.Error())
		return
	}
	if !validMsgID(req.MsgID) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("msgId: want the dead letter's offset message id (at most %d hex digits)", maxMsgIDBytes))
		return
	}
	if len(req.ClientID) > maxClientIDBytes || strings.ContainsFunc(req.ClientID, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		writeError(w, http.StatusBadRequest, "clientId: want a client id as the group's members list it")
		return
	}
	ctx := r.Context()
	m, err := s.messageByOffsetID(ctx, req.MsgID)
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	if dlq := names.DLQPrefix + req.Group; m.Topic != dlq {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("message %s is in topic %s, not in %s", req.MsgID, m.Topic, dlq))
		return
	}
	client := req.ClientID
	if client == "" {
		cc, err := s.src.ConsumerConnection(ctx, req.Group)
		var re *remoting.ResponseError
		if err != nil && !(errors.As(err, &re) && re.Code == remoting.ConsumerNotOnline) {
			s.upstream(w, r, err)
			return
		}
		if cc != nil {
			ids := make([]string, 0, len(cc.Connections))
			for _, c := range cc.Connections {
				if c.ClientID != "" {
					ids = append(ids, c.ClientID)
				}
			}
			if len(ids) > 0 {
				client = slices.Min(ids)
			}
		}
		if client == "" {
			writeError(w, http.StatusConflict, "no consumer of group "+req.Group+" is online: start one, then re-send"+
				" (the dead letter goes to a running consumer's listener, as RocketMQ's dashboard re-sends)")
			return
		}
	}
	res, err := s.src.ConsumeMessageDirectly(ctx, req.Group, client, req.MsgID)
	if err != nil {
		s.upstream(w, r, err)
		return
	}
	s.log.Info().Str("group", req.Group).Str("msg_id", req.MsgID).Str("client_id", client).
		Str("result", res.ConsumeResult).Msg("dead letter re-sent from the dashboard")
	writeJSON(w, http.StatusOK, resendBody{MsgID: req.MsgID, ClientID: client, ConsumeResult: res.ConsumeResult,
		Remark: truncate(res.Remark, errorTextBytes), SpentMillis: res.Spent.Milliseconds()})
}
