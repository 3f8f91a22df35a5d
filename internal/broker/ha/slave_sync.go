package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// slaveSyncTimeout bounds each metadata request a slave sends its master.
const slaveSyncTimeout = 3 * time.Second

// runSlaveSync copies the master's metadata every SlaveSyncPeriod (RocketMQ SlaveSynchronize
// syncAll), once the master's address is known.
func (s *Service) runSlaveSync(ctx context.Context) error {
	t := time.NewTicker(s.opts.HA.SlaveSyncPeriod)
	defer t.Stop()
	for {
		if addr := s.MasterAddr(); addr != "" {
			if err := s.syncFromMaster(ctx, addr); err != nil && ctx.Err() == nil {
				s.log.Warn().Err(err).Str("master", addr).Msg("slave metadata sync failed")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// SyncFromMaster fetches the master's topics, consumer offsets, delay offsets, subscription
// groups and message request modes from addr and installs them at once, as a tick of Run does.
func (s *Service) SyncFromMaster(ctx context.Context, addr string) error {
	return s.syncFromMaster(ctx, addr)
}

// syncFromMaster fetches and installs the five tables; each failure is reported, the others
// still run. The core checks what it installs (core_ha.go).
func (s *Service) syncFromMaster(ctx context.Context, addr string) error {
	err := errors.Join(
		s.syncOne(ctx, addr, remoting.GetAllTopicConfig, func(body []byte) error {
			var w route.TopicConfigSerializeWrapper
			if err := json.Unmarshal(body, &w); err != nil {
				return fmt.Errorf("%w: topic configs: %v", protocol.ErrMalformedBody, err)
			}
			return s.core.Topics().InstallMaster(w)
		}),
		s.syncOne(ctx, addr, remoting.GetAllConsumerOffset, func(body []byte) error {
			w, err := protocol.DecodeConsumerOffsetSerializeWrapper(body)
			if err != nil {
				return err
			}
			return s.core.Offsets().InstallMaster(w)
		}),
		s.syncDelayOffsets(ctx, addr),
		s.syncOne(ctx, addr, remoting.GetAllSubscriptionGroupConfig, func(body []byte) error {
			var w broker.SubscriptionGroupWrapper
			if err := json.Unmarshal(body, &w); err != nil {
				return fmt.Errorf("%w: subscription groups: %v", protocol.ErrMalformedBody, err)
			}
			return s.core.Groups().InstallMaster(w)
		}),
		s.syncRequestModes(ctx, addr),
	)
	if err == nil {
		s.synced.Add(1)
	}
	return err
}

// syncRequestModes copies the master's message request modes (RocketMQ 5). A master that does
// not serve GET_ALL_MESSAGE_REQUEST_MODE (RocketMQ 4.x) has none: that is not a failure.
func (s *Service) syncRequestModes(ctx context.Context, addr string) error {
	if s.modes == nil {
		return nil
	}
	err := s.syncOne(ctx, addr, remoting.GetAllMessageRequestMode, s.modes.InstallMaster)
	var re *remoting.ResponseError
	if errors.As(err, &re) && re.Code == remoting.RequestCodeNotSupported {
		return nil
	}
	return err
}

// syncDelayOffsets copies the master's delay cursors. A cursor counts a scheduled message as
// delivered once the master stored its real copy, which reaches this slave only later by
// replication: in controller mode, where this slave may become master, the cursors are installed
// only once the slave's log holds the master's log as it was when they were read, so that a
// promoted slave never skips a message whose delivered copy it lacks (it may deliver one twice).
// A fixed-role slave never delivers, and installs them at once, as RocketMQ does.
func (s *Service) syncDelayOffsets(ctx context.Context, addr string) error {
	if s.delays == nil {
		return nil
	}
	if err := s.installPendingDelays(); err != nil {
		return err
	}
	var w *protocol.DelayOffsetSerializeWrapper
	err := s.syncOne(ctx, addr, remoting.GetAllDelayOffset, func(body []byte) error {
		var err error
		w, err = protocol.DecodeDelayOffsetSerializeWrapper(body)
		return err
	})
	if err != nil {
		return err
	}
	if !s.opts.ControllerMode {
		return s.delays.SetDelayOffsets(*w)
	}
	var end int64
	err = s.syncOne(ctx, addr, remoting.GetBrokerEpochCache, func(body []byte) error {
		cache, err := DecodeEpochCache(body)
		end = cache.MaxOffset
		return err
	})
	if err != nil {
		return err
	}
	s.pendingDelays.Store(&pendingDelays{w: *w, end: end})
	return s.installPendingDelays()
}

// pendingDelays are delay cursors read from the master, and its log end right after.
type pendingDelays struct {
	w   protocol.DelayOffsetSerializeWrapper
	end int64
}

// installPendingDelays installs the pending cursors once the store holds the master's log up
// to where it ended when they were read.
func (s *Service) installPendingDelays() error {
	p := s.pendingDelays.Load()
	if p == nil || s.store.MaxPhyOffset() < p.end {
		return nil
	}
	s.pendingDelays.CompareAndSwap(p, nil)
	return s.delays.SetDelayOffsets(p.w)
}

func (s *Service) syncOne(ctx context.Context, addr string, code int32, install func([]byte) error) error {
	if s.opts.Transport == nil {
		return errors.New("broker: no transport to reach the master")
	}
	rctx, cancel := context.WithTimeout(ctx, slaveSyncTimeout)
	defer cancel()
	resp, err := s.opts.Transport.InvokeSync(rctx, addr, remoting.NewRequest(code, nil, nil))
	if err == nil {
		err = remoting.ErrorFromResponse(resp)
	}
	if err != nil {
		return fmt.Errorf("request %d: %w", code, err)
	}
	if err := install(resp.Body); err != nil {
		return fmt.Errorf("request %d: %w", code, err)
	}
	return nil
}

// MetadataSyncs counts the slave's completed metadata syncs from its master.
func (s *Service) MetadataSyncs() int64 { return s.synced.Load() }
