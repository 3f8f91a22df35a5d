// Package probes holds what the cluster and restart tests of the root module and of
// examples/mqnode observe a group with: probe messages sent straight to a broker, one per
// queue, with when a consumer first delivered each (how soon every queue resumes after a node
// comes back), and whether the group's queues are split among its members.
package probes

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// waitLimit bounds Log.Wait: longer than RocketMQ's 30 s heartbeat period, so that a stall
// shows its length instead of ending the wait.
const waitLimit = 40 * time.Second

const prefix = "probe-"

// Body is the body (and UNIQ_KEY) of the probe of tag for queue q.
func Body(tag string, q int) string { return fmt.Sprintf("%s%s-%d", prefix, tag, q) }

// Request is the SEND_MESSAGE that stores the probe of tag in queue q of topic, which has
// queues queues (created from TBW102 if it does not exist).
func Request(topic string, queues int, tag string, q int) *remoting.Command {
	body := Body(tag, q)
	h := &protocol.SendMessageRequestHeader{ProducerGroup: "probe", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: int32(queues), QueueID: int32(q), BornTimestamp: time.Now().UnixMilli(),
		Properties:        message.MarshalProperties(map[string]string{message.PropertyUniqKey: body}),
		MaxReconsumeTimes: -1}
	return remoting.NewRequest(remoting.SendMessage, remoting.EncodeHeader(h), []byte(body))
}

// Log records when each probe was first delivered. The zero value is not usable: use NewLog.
type Log struct {
	mu    sync.Mutex
	first map[string]time.Time
}

func NewLog() *Log { return &Log{first: map[string]time.Time{}} }

// Saw records the delivery of body at at; bodies that are not probes, and later deliveries of
// a probe, are ignored.
func (l *Log) Saw(body string, at time.Time) {
	if !strings.HasPrefix(body, prefix) {
		return
	}
	l.mu.Lock()
	if _, ok := l.first[body]; !ok {
		l.first[body] = at
	}
	l.mu.Unlock()
}

// Wait waits until the probe of tag for each of queues queues was delivered, for at most 40 s,
// and returns when each was first delivered, by queue; zero for one never delivered.
func (l *Log) Wait(tag string, queues int) []time.Time {
	at := make([]time.Time, queues)
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		missing := 0
		l.mu.Lock()
		for q := range queues {
			at[q] = l.first[Body(tag, q)]
			if at[q].IsZero() {
				missing++
			}
		}
		l.mu.Unlock()
		if missing == 0 {
			break
		}
	}
	return at
}
