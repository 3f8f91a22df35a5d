package broker

import (
	"context"
	"net/netip"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/storage"
)

// Messages is the core's store as the services that write and read messages of their own see
// it (transaction commits and checks, scheduled deliveries, replies, admin reads): the send
// path's checks and append, and reads of stored records.
type Messages struct{ b *Broker }

// Messages is the store's view for services.
func (b *Broker) Messages() Messages { return Messages{b} }

// StoreHost is the address stored in every message this broker appends.
func (v Messages) StoreHost() netip.AddrPort { return v.b.storeHost }

// CheckSend runs a send's checks on h (the topic, its permission, auto-creation, the queue,
// the body's and properties' sizes) and returns the queue to write and the sysFlag to store,
// or the send answer refusing it.
func (v Messages) CheckSend(ch remoting.Channel, h *protocol.SendMessageRequestHeader, bodyLen int) (queueID, sysFlag int32, refusal *remoting.Command) {
	b := v.b
	tc, queueID, resp := b.send.check(ch, h)
	if resp != nil {
		return 0, 0, resp
	}
	if bodyLen > b.opts.Limits.MaxMessageBytes || len(h.Properties) > message.MaxPropertiesBytes {
		return 0, 0, sendResponse(remoting.MessageIllegal, b.send.illegalRemark)
	}
	return queueID, storedSysFlag(h.SysFlag, tc), nil
}

// StoreAsSend appends m as a send does: it waits for SYNC_MASTER slaves and counts the put.
// stored reports whether the message was written (the send succeeds).
func (v Messages) StoreAsSend(ctx context.Context, m *storage.Message) (r storage.PutResult, stored bool, err error) {
	b := v.b
	r, err = b.store.PutMessage(m)
	b.seams.waitForSlave(ctx, &r)
	if stored = putStored(r.Status); stored {
		b.seams.countPut(m.Topic, r.Count, r.WroteBytes)
	}
	return r, stored, err
}

// Put stores m as a service's own write (a commit, a delivery, an op record) and tells the
// Scheduler when m went to one of its topics. Counting it in the statistics is the caller's
// (CountPut): op records are not counted.
func (v Messages) Put(m *storage.Message) (storage.PutResult, error) {
	r, err := v.b.store.PutMessage(m)
	v.b.seams.afterPut(m, &r)
	return r, err
}

// CountPut records n messages of size bytes stored in topic in the statistics, for services
// that store messages of their own.
func (v Messages) CountPut(topic string, n, size int) { v.b.seams.countPut(topic, n, size) }

// Schedule applies m's DELAY level or timer properties through the Scheduler, as the send path
// does (see Scheduler.Schedule): a transaction's commit calls it.
func (v Messages) Schedule(m *storage.Message) *remoting.Command { return v.b.seams.schedule(m) }

// Refusal is the send answer RocketMQ gives a put that ended with st.
func (v Messages) Refusal(st storage.PutStatus) *remoting.Command {
	code, remark := v.b.send.putStatusCode(st)
	return remoting.NewResponse(code, remark)
}

// Read decodes the record stored at a CommitLog offset; rec points into the store's memory
// until the segment goes.
func (v Messages) Read(phyOffset int64, rec *message.Record) error {
	raw, err := v.b.store.LookMessageByOffset(phyOffset)
	if err != nil {
		return err
	}
	_, err = message.DecodeRecord(raw, rec, false)
	return err
}

// CheckRead applies the ACL read check to a stored record a request reads (ReadCheck): nil
// when allowed, else the refusal.
func (v Messages) CheckRead(ch remoting.Channel, req *remoting.Command, raw []byte) *remoting.Command {
	return v.b.checkReadRaw(ch, req, raw)
}
