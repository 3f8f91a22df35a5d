package metrics

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/clients"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The consumers' own figures, which only they know: consume RT, successes and failures, pull RT
// and rate, per topic, from the statusTable of their answer to GET_CONSUMER_RUNNING_INFO (307),
// as rocketmq-exporter's ClientMetricTaskRunnable asks every online consumer for it. A master
// asks its connected consumers when a scrape finds the last answers older than
// clientStatsPeriod, and only then: a node nobody scrapes sends nothing. The asking is bounded
// in every way a consumer could stretch it: clientStatsParallel requests at once, all of them
// within clientStatsTimeout (a consumer that answers late is left out of this round), at most
// maxClientsAsked consumers a round, answers over maxRunningInfoBytes skipped, and only the
// topics the consumer's group subscribes to on this broker (and its retry topic) read from an
// answer, with their figures finite and not negative. The scrape that asks waits for the round;
// the others read the last answers. A round keeps at most maxClientRows (consumer, topic)
// figures, in (group, consumer, topic) order.
const (
	clientStatsPeriod   = 30 * time.Second
	clientStatsTimeout  = 3 * time.Second
	clientStatsParallel = 8
	maxClientsAsked     = 256
	// maxClientRows bounds the (consumer, topic) figures a round keeps: a consumer's group may
	// subscribe to every topic.
	maxClientRows       = 4096
	maxRunningInfoBytes = 1 << 20
	// minRunningInfoClientVersion is MQVersion.V3_1_8_SNAPSHOT's ordinal, the first client
	// version RocketMQ relays GET_CONSUMER_RUNNING_INFO to.
	minRunningInfoClientVersion int16 = 77
)

var clientLabels = []string{"clientId", "group", "topic"}

func clientDesc(name, help string) *prometheus.Desc { return expDesc(name, help, clientLabels...) }

var (
	descClientFailCount = clientDesc("rocketmq_client_consume_fail_msg_count", "Messages the consumer failed to consume in the last hour (its consumeFailedMsgs).")
	descClientFailTPS   = clientDesc("rocketmq_client_consume_fail_msg_tps", "Messages the consumer failed to consume per second over the last minute (consumeFailedTPS).")
	descClientOKTPS     = clientDesc("rocketmq_client_consume_ok_msg_tps", "Messages the consumer consumed per second over the last minute (consumeOKTPS).")
	descClientRT        = clientDesc("rocketmq_client_consume_rt", "Mean time in milliseconds the consumer's listener took per call over the last minute (consumeRT).")
	descClientPullRT    = clientDesc("rocketmq_client_consumer_pull_rt", "Mean time in milliseconds the consumer's pulls took over the last minute (pullRT).")
	descClientPullTPS   = clientDesc("rocketmq_client_consumer_pull_tps", "Messages the consumer pulled per second over the last minute (pullTPS).")

	clientDescs = []*prometheus.Desc{descClientFailCount, descClientFailTPS, descClientOKTPS, descClientRT,
		descClientPullRT, descClientPullTPS}
)

// clientRow is one consumer's figures of one topic.
type clientRow struct {
	group, topic, clientID string
	st                     protocol.ConsumeStatus
}

// clientStats keeps the last round's answers.
type clientStats struct {
	log        zerolog.Logger
	asking     atomic.Bool // a round is under way
	mu         sync.Mutex
	at         time.Time // when the last round started; zero before the first
	rows       []clientRow
	leftOut    clientsLeftOut
	period     time.Duration
	timeout    time.Duration
	maxClients int
	maxRows    int
}

// clientsLeftOut counts what a round's caps left out.
type clientsLeftOut struct{ clients, rows int }

func newClientStats(l *zerolog.Logger) *clientStats {
	c := &clientStats{log: zerolog.Nop(), period: clientStatsPeriod, timeout: clientStatsTimeout,
		maxClients: maxClientsAsked, maxRows: maxClientRows}
	if l != nil {
		c.log = l.With().Str("component", "metrics").Logger()
	}
	return c
}

// read returns the consumers' figures of the groups b still has, asking them first when the
// last answers are older than the period and no other scrape is asking; leftOut is what the
// round's caps left out.
func (c *clientStats) read(b *broker.Broker, now time.Time) (rows []clientRow, leftOut clientsLeftOut) {
	c.mu.Lock()
	stale := c.at.IsZero() || now.Sub(c.at) >= c.period
	rows, leftOut = c.rows, c.leftOut
	c.mu.Unlock()
	if stale && c.asking.CompareAndSwap(false, true) {
		rows, leftOut = c.ask(b)
		c.mu.Lock()
		c.rows, c.leftOut, c.at = rows, leftOut, now
		c.mu.Unlock()
		c.asking.Store(false)
	}
	// A group or topic deleted since the round goes now, not at the next one.
	out := make([]clientRow, 0, len(rows))
	for _, r := range rows {
		if _, ok := b.Groups().Get(r.group); !ok {
			continue
		}
		if _, ok := b.Topics().Get(r.topic); ok || r.topic == names.RetryTopic(r.group) {
			out = append(out, r) // a retry topic exists from the group's first send-back only
		}
	}
	return out, leftOut
}

// clientJob is one consumer to ask and the topics to read of its answer.
type clientJob struct {
	group  string
	conn   clients.Conn
	topics map[string]bool
}

// ask runs one round.
func (c *clientStats) ask(b *broker.Broker) ([]clientRow, clientsLeftOut) {
	counts, _ := b.Clients().Counts()
	groups := make([]string, 0, len(counts))
	for g, n := range counts {
		if n > 0 {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	var jobs []clientJob
	var leftOut clientsLeftOut
	for _, g := range groups {
		if _, ok := b.Groups().Get(g); !ok {
			continue
		}
		state, ok := b.Clients().ConsumerGroup(g)
		if !ok || state.MessageModel == protocol.Broadcasting {
			continue // broadcast consumers keep their own offsets; the exporter skips them too
		}
		topics := map[string]bool{names.RetryTopic(g): true}
		for _, s := range state.Subscriptions {
			topics[s.Topic] = true
		}
		seen := map[string]bool{}
		for _, m := range b.Clients().Members(g) {
			if seen[m.ClientID] || m.Version < minRunningInfoClientVersion {
				continue
			}
			seen[m.ClientID] = true
			if len(jobs) == c.maxClients {
				leftOut.clients++
				continue
			}
			jobs = append(jobs, clientJob{group: g, conn: m, topics: topics})
		}
	}
	if len(jobs) == 0 {
		return nil, leftOut
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	results := make([][]clientRow, len(jobs))
	sem := make(chan struct{}, clientStatsParallel)
	var wg sync.WaitGroup
launch:
	for i, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			leftOut.clients += len(jobs) - i
			break launch
		}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = c.askOne(ctx, j)
		})
	}
	wg.Wait()
	var rows []clientRow
	for _, r := range results { // in job order: by group, then the registry's member order
		slices.SortFunc(r, func(a, b clientRow) int { return strings.Compare(a.topic, b.topic) })
		rows = append(rows, r...)
	}
	if len(rows) > c.maxRows {
		leftOut.rows = len(rows) - c.maxRows
		rows = rows[:c.maxRows]
	}
	return rows, leftOut
}

// askOne asks one consumer and keeps the figures of its group's topics.
func (c *clientStats) askOne(ctx context.Context, j clientJob) []clientRow {
	h := protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: j.group, ClientID: j.conn.ClientID}
	resp, err := j.conn.Channel.InvokeSync(ctx, remoting.NewRequest(remoting.GetConsumerRunningInfo, remoting.EncodeHeader(&h), nil))
	debug := func() *zerolog.Event {
		return c.log.Debug().Str("group", j.group).Str("client", j.conn.ClientID)
	}
	switch {
	case err != nil:
		debug().Err(err).Msg("consumer running info not answered")
		return nil
	case resp.Code != remoting.Success:
		debug().Int32("code", resp.Code).Msg("consumer running info refused")
		return nil
	case len(resp.Body) > maxRunningInfoBytes:
		debug().Int("bytes", len(resp.Body)).Msg("consumer running info too large")
		return nil
	}
	info, err := protocol.DecodeConsumerRunningInfo(resp.Body)
	if err != nil {
		debug().Err(err).Msg("consumer running info unreadable")
		return nil
	}
	var rows []clientRow
	for topic, st := range info.StatusTable {
		if j.topics[topic] && saneStatus(st) {
			rows = append(rows, clientRow{group: j.group, topic: topic, clientID: j.conn.ClientID, st: st})
		}
	}
	return rows
}

// saneStatus refuses figures no consumer measures: negative or not finite.
func saneStatus(st protocol.ConsumeStatus) bool {
	for _, v := range [...]float64{st.PullRT, st.PullTPS, st.ConsumeRT, st.ConsumeOKTPS, st.ConsumeFailedTPS} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return st.ConsumeFailedMsgs >= 0
}

// collectClients emits the consumers' figures.
func collectClients(e emitter, rows []clientRow) {
	g := prometheus.GaugeValue
	for _, r := range rows {
		l := []string{r.clientID, r.group, r.topic}
		e.emit(descClientFailCount, g, float64(r.st.ConsumeFailedMsgs), l...)
		e.emit(descClientFailTPS, g, r.st.ConsumeFailedTPS, l...)
		e.emit(descClientOKTPS, g, r.st.ConsumeOKTPS, l...)
		e.emit(descClientRT, g, r.st.ConsumeRT, l...)
		e.emit(descClientPullRT, g, r.st.PullRT, l...)
		e.emit(descClientPullTPS, g, r.st.PullTPS, l...)
	}
}
