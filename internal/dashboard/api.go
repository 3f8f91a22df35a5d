package dashboard

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// Bounds on what one API answer carries: the cluster's tables are network input, and a page
// polling every two seconds must stay cheap for the brokers.
const (
	maxTopics        = 200  // topics whose stats one /api/topics asks for
	maxGroups        = 200  // groups whose stats one /api/groups asks for
	maxQueueRows     = 1024 // per-queue lag rows of one group
	maxKeyBytes      = 1024 // a message key in a lookup
	maxMsgIDBytes    = 64   // an offset message id or unique key is 32 or 40 hex digits
	maxKeyResults    = 32   // messages one key lookup returns, mqadmin queryMsgByKey's default
	maxBodyBytes     = 64 << 10
	maxWriteBody     = 4 << 10
	parallelRequests = 4
	errorTextBytes   = 512
)

// errorBody is every error answer: {"error": "..."}.
type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client gone away is nothing to report
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: truncate(msg, errorTextBytes)})
}

// upstream answers a failed admin call: the cluster, not the request, is at fault.
func (s *Server) upstream(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Debug().Err(err).Str("path", r.URL.Path).Msg("admin call failed")
	status := http.StatusBadGateway
	if errors.Is(err, context.DeadlineExceeded) {
		status = http.StatusGatewayTimeout
	}
	writeError(w, status, err.Error())
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// forEach runs fn(0..n-1) with at most parallelRequests at a time, and stops starting new ones
// once ctx is done.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int)) {
	sem := make(chan struct{}, parallelRequests)
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(ctx, i)
		})
	}
	wg.Wait()
}

type overviewBody struct {
	RefreshMillis int64               `json:"refreshMs"`
	Clusters      map[string][]string `json:"clusters"`
	Brokers       []brokerRow         `json:"brokers"`
	History       []point             `json:"history"`
	SampledAt     int64               `json:"sampledAt"`
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	snap, history, err := s.rates.current(r.Context())
	if err != nil {
		s.upstream(w, r, fmt.Errorf("cluster info: %w", err))
		return
	}
	if history == nil {
		history = []point{}
	}
	writeJSON(w, http.StatusOK, overviewBody{RefreshMillis: s.refresh.Milliseconds(), Clusters: snap.clusters,
		Brokers: snap.brokers, History: history, SampledAt: snap.at.UnixMilli()})
}

type topicRow struct {
	Topic       string `json:"topic"`
	System      bool   `json:"system"`
	ReadQueues  int    `json:"readQueues"`
	WriteQueues int    `json:"writeQueues"`
	Perm        string `json:"perm"`
	Brokers     int    `json:"brokers"`
	Messages    int64  `json:"messages"`
	LastPut     int64  `json:"lastPut"` // unix ms, 0 = never
	Error       string `json:"error,omitempty"`
}

type topicsBody struct {
	Topics    []topicRow `json:"topics"`
	Hidden    int        `json:"hidden"` // system topics left out
	Total     int        `json:"total"`
	Truncated bool       `json:"truncated"`
}

// systemTopic reports the topics a broker or client makes for itself, which the page hides
// unless asked: RocketMQ's system topics, every group's retry and dead-letter topics, the
// request-reply topics, and the topics named after each cluster and broker.
func systemTopic(topic string, clusterOrBroker map[string]bool) bool {
	return names.Reserved(topic) || strings.HasPrefix(topic, names.RetryPrefix) ||
		strings.HasPrefix(topic, names.DLQPrefix) || strings.HasSuffix(topic, names.ReplyTopicSuffix) ||
		clusterOrBroker[topic]
}

func (s *Server) topics(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	withSystem := r.URL.Query().Get("system") == "1"
	list, err := s.src.TopicList(ctx)
	if err != nil {
		s.upstream(w, r, err)
		return
	}
	reserved := map[string]bool{}
	if ci, err := s.src.ClusterInfo(ctx); err == nil {
		for cluster := range ci.ClusterAddrTable {
			reserved[cluster] = true
		}
		for name := range ci.BrokerAddrTable {
			reserved[name] = true
		}
	}
	body := topicsBody{Topics: []topicRow{}, Total: len(list)}
	for _, t := range slices.Sorted(slices.Values(list)) {
		sys := systemTopic(t, reserved)
		if sys && !withSystem {
			body.Hidden++
			continue
		}
		if len(body.Topics) == maxTopics {
			body.Truncated = true
			break
		}
		body.Topics = append(body.Topics, topicRow{Topic: t, System: sys})
	}
	forEach(ctx, len(body.Topics), func(ctx context.Context, i int) {
		row := &body.Topics[i]
		rt, err := s.src.TopicRoute(ctx, row.Topic)
		if err != nil {
			row.Error = err.Error()
			return
		}
		for _, qd := range rt.QueueDatas {
			row.ReadQueues += int(qd.ReadQueueNums)
			row.WriteQueues += int(qd.WriteQueueNums)
			row.Perm = route.PermString(qd.Perm)
		}
		row.Brokers = len(rt.QueueDatas)
		stats, err := s.src.TopicStats(ctx, row.Topic)
		if err != nil {
			row.Error = err.Error()
			return
		}
		for _, off := range stats {
			if off.MaxOffset > off.MinOffset {
				row.Messages += off.MaxOffset - off.MinOffset
			}
			if !off.LastUpdate.IsZero() {
				row.LastPut = max(row.LastPut, off.LastUpdate.UnixMilli())
			}
		}
	})
	writeJSON(w, http.StatusOK, body)
}

type member struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int    `json:"version"`
}

type subscription struct {
	Topic      string `json:"topic"`
	Expression string `json:"expression"`
	Type       string `json:"type"`
}

type queueLag struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int    `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Lag            int64  `json:"lag"`
	LastTimestamp  int64  `json:"lastTimestamp"` // unix ms of the last consumed message, 0 = none
}

type groupRow struct {
	Group            string         `json:"group"`
	Online           bool           `json:"online"`
	Members          []member       `json:"members"`
	Subscriptions    []subscription `json:"subscriptions"`
	ConsumeType      string         `json:"consumeType,omitempty"`
	MessageModel     string         `json:"messageModel,omitempty"`
	ConsumeFromWhere string         `json:"consumeFromWhere,omitempty"`
	Lag              int64          `json:"lag"`
	// TPS is the broker's consumeTps, else the rise of the committed offsets since an earlier
	// poll; null when neither is known.
	TPS             *float64   `json:"tps"`
	Queues          []queueLag `json:"queues"`
	QueuesTruncated bool       `json:"queuesTruncated,omitempty"`
	Error           string     `json:"error,omitempty"`
}

type groupsBody struct {
	Groups    []groupRow `json:"groups"`
	Truncated bool       `json:"truncated"`
}

func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	list, err := s.src.ConsumerGroups(ctx)
	if err != nil {
		s.upstream(w, r, err)
		return
	}
	body := groupsBody{Groups: make([]groupRow, 0, min(len(list), maxGroups))}
	for _, g := range list {
		if len(body.Groups) == maxGroups {
			body.Truncated = true
			break
		}
		body.Groups = append(body.Groups, groupRow{Group: g, Members: []member{},
			Subscriptions: []subscription{}, Queues: []queueLag{}})
	}
	forEach(ctx, len(body.Groups), func(ctx context.Context, i int) {
		s.fillGroup(ctx, &body.Groups[i])
	})
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) fillGroup(ctx context.Context, row *groupRow) {
	cc, err := s.src.ConsumerConnection(ctx, row.Group)
	var re *remoting.ResponseError
	switch {
	case err == nil:
		row.Online = len(cc.Connections) > 0
		for _, c := range cc.Connections {
			row.Members = append(row.Members, member{ClientID: c.ClientID, ClientAddr: c.ClientAddr,
				Language: c.Language, Version: c.Version})
		}
		for _, sub := range cc.Subscriptions {
			row.Subscriptions = append(row.Subscriptions, subscription(sub))
		}
		row.ConsumeType, row.MessageModel, row.ConsumeFromWhere = cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere
	case errors.As(err, &re) && re.Code == remoting.ConsumerNotOnline:
		// An offline group still has offsets and lag.
	default:
		row.Error = err.Error()
	}
	stats, err := s.src.ConsumeStats(ctx, row.Group, "")
	if err != nil {
		if row.Error == "" {
			row.Error = err.Error()
		}
		return
	}
	row.Lag = stats.Diff()
	var consumed int64
	for _, off := range stats.Offsets {
		consumed += off.ConsumerOffset
	}
	row.TPS = s.consumeRate(row.Group, consumed, time.Now())
	if stats.ConsumeTPS > 0 {
		row.TPS = &stats.ConsumeTPS
	}
	queues := slices.SortedFunc(maps.Keys(stats.Offsets), func(a, b admin.MessageQueue) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.QueueID, b.QueueID))
	})
	if len(queues) > maxQueueRows {
		queues, row.QueuesTruncated = queues[:maxQueueRows], true
	}
	for _, q := range queues {
		off := stats.Offsets[q]
		ql := queueLag{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID, BrokerOffset: off.BrokerOffset,
			ConsumerOffset: off.ConsumerOffset, Lag: off.BrokerOffset - off.ConsumerOffset}
		if !off.LastTimestamp.IsZero() {
			ql.LastTimestamp = off.LastTimestamp.UnixMilli()
		}
		row.Queues = append(row.Queues, ql)
	}
}

// consumeMark is a group's committed offsets at one poll, and the rate last derived from them.
type consumeMark struct {
	at       time.Time
	consumed int64
	rate     *float64
}

// consumeRate derives a group's consume rate from the rise of its committed offsets between
// polls at least Refresh/2 apart (pages polling together share the marks); nil until two
// polls have been seen, and after offsets moved back (a reset).
func (s *Server) consumeRate(group string, consumed int64, now time.Time) *float64 {
	s.marksMu.Lock()
	defer s.marksMu.Unlock()
	prev, ok := s.marks[group]
	if ok && now.Sub(prev.at) < s.refresh/2 {
		return prev.rate
	}
	next := consumeMark{at: now, consumed: consumed}
	if elapsed := now.Sub(prev.at).Seconds(); ok && elapsed > 0 && consumed >= prev.consumed {
		next.rate = ptr(float64(consumed-prev.consumed) / elapsed)
	}
	if !ok && len(s.marks) >= maxGroups {
		clear(s.marks) // groups come and go: forget them all rather than grow
	}
	s.marks[group] = next
	return next.rate
}

type messageView struct {
	MsgID           string            `json:"msgId"`
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	Tags            string            `json:"tags"`
	Keys            []string          `json:"keys"`
	BrokerName      string            `json:"brokerName"`
	QueueID         int               `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	StoreTime       int64             `json:"storeTime"` // unix ms
	BornTime        int64             `json:"bornTime"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	Properties      map[string]string `json:"properties"`
	// Body is the text when the body is valid UTF-8, else its base64 (BodyEncoding says which),
	// of at most maxBodyBytes of it.
	Body          string `json:"body"`
	BodyEncoding  string `json:"bodyEncoding"`
	BodySize      int    `json:"bodySize"`
	BodyTruncated bool   `json:"bodyTruncated"`
}

func viewOf(m *consumer.Message) messageView {
	v := messageView{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Tags: m.Tags, Keys: m.Keys,
		BrokerName: m.Queue.BrokerName, QueueID: m.Queue.QueueID, QueueOffset: m.QueueOffset,
		CommitLogOffset: m.CommitLogOffset, ReconsumeTimes: m.ReconsumeTimes, Properties: m.Properties,
		BodySize: len(m.Body)}
	if v.Keys == nil {
		v.Keys = []string{}
	}
	if v.Properties == nil {
		v.Properties = map[string]string{}
	}
	if !m.StoreTime.IsZero() {
		v.StoreTime = m.StoreTime.UnixMilli()
	}
	if !m.BornTime.IsZero() {
		v.BornTime = m.BornTime.UnixMilli()
	}
	if m.BornHost.IsValid() {
		v.BornHost = m.BornHost.String()
	}
	if m.StoreHost.IsValid() {
		v.StoreHost = m.StoreHost.String()
	}
	body := m.Body
	if len(body) > maxBodyBytes {
		body, v.BodyTruncated = body[:maxBodyBytes], true
	}
	if utf8.Valid(m.Body) {
		v.Body, v.BodyEncoding = truncate(string(m.Body), maxBodyBytes), "text"
		v.BodyTruncated = len(m.Body) > maxBodyBytes
	} else {
		v.Body, v.BodyEncoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return v
}

type messagesBody struct {
	Messages []messageView `json:"messages"`
}

// validMsgID admits the hex of an offset message id or a unique key, nothing longer.
func validMsgID(id string) bool {
	if id == "" || len(id) > maxMsgIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, topic, key := strings.TrimSpace(q.Get("id")), strings.TrimSpace(q.Get("topic")), q.Get("key")
	if topic != "" {
		if err := names.CheckTopic(topic); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	ctx := r.Context()
	switch {
	case id != "":
		if !validMsgID(id) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("message id: want at most %d hex digits", maxMsgIDBytes))
			return
		}
		m, err := s.messageByOffsetID(ctx, id)
		if err != nil && topic != "" {
			// Not an offset message id, or not found there: the id a producer is given is the
			// unique key (UNIQ_KEY), found through the topic's index.
			var uerr error
			if m, uerr = s.src.QueryMessageByUniqueKey(ctx, topic, id); uerr != nil {
				err = fmt.Errorf("%w; as a unique key: %w", err, uerr)
			} else {
				err = nil
			}
		}
		if err != nil {
			hint := ""
			if topic == "" {
				hint = " (give the topic to look the id up as a unique key)"
			}
			s.log.Debug().Err(err).Msg("message lookup failed")
			writeError(w, http.StatusNotFound, err.Error()+hint)
			return
		}
		writeJSON(w, http.StatusOK, messagesBody{Messages: []messageView{viewOf(m)}})
	case key != "":
		if topic == "" {
			writeError(w, http.StatusBadRequest, "a key lookup needs the topic")
			return
		}
		if len(key) > maxKeyBytes || !utf8.ValidString(key) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("key: want at most %d bytes of UTF-8", maxKeyBytes))
			return
		}
		now := time.Now()
		msgs, err := s.src.QueryMessageByKey(ctx, topic, key, maxKeyResults, time.UnixMilli(0), now.Add(time.Minute))
		if err != nil {
			s.upstream(w, r, err)
			return
		}
		body := messagesBody{Messages: make([]messageView, 0, min(len(msgs), maxKeyResults))}
		for _, m := range msgs[:min(len(msgs), maxKeyResults)] {
			body.Messages = append(body.Messages, viewOf(m))
		}
		if len(body.Messages) == 0 {
			writeError(w, http.StatusNotFound, fmt.Sprintf("no message with key %q in topic %s", truncate(key, 64), topic))
			return
		}
		writeJSON(w, http.StatusOK, body)
	default:
		writeError(w, http.StatusBadRequest, "give a message id, or a topic and a key")
	}
}

// messageByOffsetID looks an offset message id up on the broker it names, when that broker is
// one of the cluster's: the id is a request's text, and the dashboard dials no address a
// visitor makes up (a unique key, read as an offset id, names some other host).
func (s *Server) messageByOffsetID(ctx context.Context, id string) (*consumer.Message, error) {
	host, _, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return nil, fmt.Errorf("not an offset message id: %w", err)
	}
	ci, err := s.src.ClusterInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster info: %w", err)
	}
	for _, bd := range ci.BrokerAddrTable {
		for _, addr := range bd.BrokerAddrs {
			if ap, err := netip.ParseAddrPort(addr); err == nil && ap == host {
				return s.src.QueryMessageByID(ctx, id)
			}
		}
	}
	return nil, fmt.Errorf("message id %s names %s, no broker of the cluster", id, host)
}

type resetRequest struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Timestamp int64  `json:"timestamp"` // unix ms
	Force     bool   `json:"force"`
}

type resetOffset struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Offset     int64  `json:"offset"`
}

type resetBody struct {
	Offsets []resetOffset `json:"offsets"`
}

// maxResetMillis is 9999-12-31, the last instant a date-time input can name.
const maxResetMillis = 253402300799999

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	// A write: guardAPI (guard.go) let only this node's own page make it.
	var req resetRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if err := names.CheckGroup(req.Group); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := names.CheckTopic(req.Topic); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Timestamp < 0 || req.Timestamp > maxResetMillis {
		writeError(w, http.StatusBadRequest, "timestamp: want unix milliseconds up to year 9999")
		return
	}
	offsets, err := s.src.ResetOffsetByTime(r.Context(), req.Group, req.Topic, time.UnixMilli(req.Timestamp), req.Force)
	if err != nil {
		s.upstream(w, r, err)
		return
	}
	s.log.Info().Str("group", req.Group).Str("topic", req.Topic).Int64("timestamp", req.Timestamp).
		Bool("force", req.Force).Int("queues", len(offsets)).Msg("offsets reset from the dashboard")
	body := resetBody{Offsets: make([]resetOffset, 0, len(offsets))}
	for q, off := range offsets {
		body.Offsets = append(body.Offsets, resetOffset{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID, Offset: off})
	}
	slices.SortFunc(body.Offsets, func(a, b resetOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.QueueID, b.QueueID))
	})
	writeJSON(w, http.StatusOK, body)
}
