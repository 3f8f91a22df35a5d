package locks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/reqnames"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Service serves the queue locks over a broker core.
type Service struct {
	core  *broker.Broker
	table *Table
	// maxLive is how long a lock lives without renewal (Periods.RebalanceLockMaxLiveTime).
	maxLive time.Duration
}

// New builds the service over core, with no lock held. Attach it to core before Register.
func New(core *broker.Broker) *Service {
	return &Service{core: core, table: NewTable(), maxLive: core.Options().Periods.RebalanceLockMaxLiveTime}
}

// Handlers are LOCK_BATCH_MQ and UNLOCK_BATCH_MQ, on the client pool. Their names travel in
// the body, which decodeLockBody checks.
func (s *Service) Handlers() []broker.Handler {
	pool := s.core.Pools().Client
	return []broker.Handler{
		{Code: remoting.LockBatchMQ, Proc: remoting.ProcessorFunc(s.processLockBatch), Pool: pool},
		{Code: remoting.UnlockBatchMQ, Proc: remoting.ProcessorFunc(s.processUnlockBatch), Pool: pool},
	}
}

// Run forgets expired locks every ScanConnectionInterval until ctx ends. They are free to take
// already; this bounds the table by the locks held lately.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.core.Options().ScanConnectionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			s.table.Expire(now, s.maxLive)
		}
	}
}

// Close has nothing to write: locks do not outlive the broker.
func (s *Service) Close() error { return nil }

// decodeLockBody decodes a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ body and checks its names.
func decodeLockBody(req *remoting.Command) (*protocol.LockBatchRequestBody, error) {
	var body protocol.LockBatchRequestBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, &remoting.ResponseError{Code: remoting.SystemError, Remark: "lock body: " + err.Error()}
	}
	if err := reqnames.CheckLock(&body); err != nil {
		return nil, err
	}
	return &body, nil
}

// processLockBatch answers LOCK_BATCH_MQ with the requested queues the caller now holds.
func (s *Service) processLockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := decodeLockBody(req)
	if err != nil {
		return nil, err
	}
	locked := s.table.TryLock(body.ConsumerGroup, body.ClientID, body.MQSet, time.Now(), s.maxLive)
	out, err := json.Marshal(protocol.LockBatchResponseBody{LockOKMQSet: locked})
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = out
	return resp, nil
}

// processUnlockBatch releases the caller's locks among the requested queues.
func (s *Service) processUnlockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := decodeLockBody(req)
	if err != nil {
		return nil, err
	}
	s.table.Unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return remoting.NewResponse(remoting.Success, ""), nil
}
