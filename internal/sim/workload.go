package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/node"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/rs/zerolog"
)

// workload is the run's producers and consumers. Producers send messages whose body starts with
// a key unique to the run ("p1-42"); consumers of one group receive them; both report to the
// observations.
type workload struct {
	c    *cluster
	obs  *observations
	zlog zerolog.Logger
	seed uint64

	ctx    context.Context // ends the producers' loops
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	consumers []*consumer.PushConsumer // by index; nil while that consumer is stopped
}

func newWorkload(c *cluster, obs *observations, zlog zerolog.Logger, seed uint64) *workload {
	w := &workload{c: c, obs: obs, zlog: zlog, seed: seed, consumers: make([]*consumer.PushConsumer, c.cfg.Consumers)}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	for i := range c.cfg.Producers {
		c.clients = append(c.clients, fmt.Sprintf("p%d", i))
	}
	for i := range c.cfg.Consumers {
		c.clients = append(c.clients, fmt.Sprintf("c%d", i))
	}
	return w
}

// transport is a client's transport under the fault injector as name.
func (w *workload) transport(name string) *remoting.InProcTransport {
	tr := node.LocalTransport()
	w.c.faults.Join(tr, name)
	return tr
}

// startProducers starts every producer's send loop.
func (w *workload) startProducers() error {
	for i := range w.c.cfg.Producers {
		name := fmt.Sprintf("p%d", i)
		p, err := producer.New(producer.WithNameServers(w.c.nameServerAddrs()...),
			producer.WithOwnedTransport(w.transport(name)), producer.WithLogger(&w.zlog),
			producer.WithInstanceName(name), producer.WithPollNameServerInterval(clientRoutePeriod),
			producer.WithHeartbeatInterval(clientHeartbeat))
		if err != nil {
			return fmt.Errorf("sim: producer %s: %w", name, err)
		}
		r := rand.New(rand.NewPCG(w.seed, uint64(100+i)))
		w.wg.Go(func() {
			defer p.Close()
			w.produce(p, name, r)
		})
	}
	return nil
}

// produce sends until the workload's context ends: mostly single synchronous sends, some
// asynchronous ones and some batches, at random intervals.
func (w *workload) produce(p *producer.Producer, name string, r *rand.Rand) {
	var async sync.WaitGroup
	defer async.Wait()
	for seq := 0; ; seq++ {
		t := time.NewTimer(time.Duration(20+r.IntN(300)) * time.Millisecond)
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		kind := r.IntN(20)
		n := 1
		if kind == 0 {
			n = 2 + r.IntN(3)
		}
		var keys []string
		var msgs []*producer.Message
		for j := range n {
			key := fmt.Sprintf("%s-%d", name, seq)
			if n > 1 {
				key = fmt.Sprintf("%s-%d.%d", name, seq, j)
			}
			keys = append(keys, key)
			body := key + "|" + strings.Repeat("x", r.IntN(400))
			msgs = append(msgs, &producer.Message{Topic: topic, Body: []byte(body), Keys: []string{key}})
		}
		w.obs.sent(len(keys))
		switch {
		case n > 1:
			res, err := p.SendBatch(w.ctx, msgs...)
			w.obs.sendResult(keys, res, err)
		case kind < 4:
			async.Add(1)
			err := p.SendAsync(w.ctx, msgs[0], func(res *producer.SendResult, err error) {
				defer async.Done()
				w.obs.sendResult(keys, res, err)
			})
			if err != nil {
				async.Done()
				w.obs.sendResult(keys, nil, err)
			}
		default:
			res, err := p.SendSync(w.ctx, msgs[0])
			w.obs.sendResult(keys, res, err)
		}
	}
}

// stopProducers ends the send loops and waits for them and their last answers.
func (w *workload) stopProducers() {
	w.cancel()
	w.wg.Wait()
}

// startConsumer starts consumer i of the group.
func (w *workload) startConsumer(i int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.consumers[i] != nil {
		return nil
	}
	name := fmt.Sprintf("c%d", i)
	pc, err := consumer.NewPushConsumer(consumer.WithNameServers(w.c.nameServerAddrs()...),
		consumer.WithOwnedTransport(w.transport(name)), consumer.WithLogger(&w.zlog),
		consumer.WithGroup(group), consumer.WithInstanceName(name),
		consumer.WithConsumeFrom(consumer.FromFirstOffset, time.Time{}),
		consumer.WithRebalanceInterval(rebalanceInterval), consumer.WithPersistInterval(persistInterval),
		consumer.WithPullErrorDelay(pullErrorDelay), consumer.WithSendBackRetryDelay(pullErrorDelay),
		consumer.WithPollNameServerInterval(clientRoutePeriod), consumer.WithHeartbeatInterval(clientHeartbeat))
	if err != nil {
		return fmt.Errorf("sim: consumer %s: %w", name, err)
	}
	if err := pc.Subscribe(topic, "*", w.listener); err != nil {
		return fmt.Errorf("sim: consumer %s: %w", name, err)
	}
	if err := pc.Start(); err != nil {
		return fmt.Errorf("sim: consumer %s: %w", name, err)
	}
	w.consumers[i] = pc
	return nil
}

// running reports whether consumer i runs.
func (w *workload) running(i int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.consumers[i] != nil
}

// stopConsumer closes consumer i, which persists its offsets.
func (w *workload) stopConsumer(i int) {
	w.mu.Lock()
	pc := w.consumers[i]
	w.consumers[i] = nil
	w.mu.Unlock()
	if pc != nil {
		pc.Close()
	}
}

func (w *workload) stopConsumers() {
	for i := range w.consumers {
		w.stopConsumer(i)
	}
}

// listener records what it is given; now and then it asks for a message again later, so that
// retries (the group's retry topic, CONSUMER_SEND_MSG_BACK) run too. Whether it does follows
// from the message's key and how often it was seen, not from the order goroutines run in.
func (w *workload) listener(_ context.Context, msgs []*consumer.Message) (consumer.ConsumeResult, error) {
	for _, m := range msgs {
		key, _, _ := strings.Cut(string(m.Body), "|")
		if m.ReconsumeTimes == 0 && mix(w.seed^hashString(key))%50 == 0 {
			w.obs.consumed(m, key, false)
			return consumer.ConsumeRetryLater, nil
		}
	}
	for _, m := range msgs {
		key, _, _ := strings.Cut(string(m.Body), "|")
		w.obs.consumed(m, key, true)
	}
	return consumer.ConsumeSuccess, nil
}

func hashString(s string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
