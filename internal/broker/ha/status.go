package ha

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// processHAStatus handles GET_BROKER_HA_STATUS (907), RocketMQ 5's getBrokerHaStatus (mqadmin
// haStatus): a master answers its CommitLog end and each connected slave's acknowledgement,
// lag and transfer rate, a slave its connection to its master. A slave is in sync while it
// lags less than haSlaveFallbehindMax (RocketMQ 5's haMaxGapNotInSync, 256 MiB both). A
// slave's masterFlushOffset is 0: mq's HA protocol does not carry the master's flushed offset.
func (s *Service) processHAStatus(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
	info := protocol.HARuntimeInfo{HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
	switch {
	case s.master != nil:
		info.Master = true
		end := s.store.MaxPhyOffset()
		info.MasterCommitLogMaxOffset = end
		gap := s.opts.HA.SlaveFallBehindMax
		if gap <= 0 {
			gap = config.DefaultHASlaveFallBehindMax
		}
		for _, sl := range s.master.Slaves() {
			c := protocol.HAConnectionRuntimeInfo{Addr: sl.Addr, SlaveAckOffset: sl.AckOffset, Diff: end - sl.AckOffset,
				TransferredByteInSecond: sl.BytesPerSecond, TransferFromWhere: sl.TransferFrom}
			c.InSync = c.Diff < gap
			if c.InSync {
				info.InSyncSlaveNums++
			}
			info.HAConnectionInfo = append(info.HAConnectionInfo, c)
		}
		slices.SortFunc(info.HAConnectionInfo, func(x, y protocol.HAConnectionRuntimeInfo) int { return strings.Compare(x.Addr, y.Addr) })
	case s.slave != nil:
		st := s.slave.Status()
		info.HAClientRuntimeInfo = protocol.HAClientRuntimeInfo{MasterAddr: st.MasterAddr, MaxOffset: s.store.MaxPhyOffset(),
			TransferredByteInSecond: st.BytesPerSecond, LastReadTimestamp: millis(st.LastRead), LastWriteTimestamp: millis(st.LastWrite)}
	}
	body, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = body
	return resp, nil
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
