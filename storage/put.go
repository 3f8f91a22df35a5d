package storage

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/mqgo/mq/internal/message"
)

// Message is what the broker appends. PutMessage fills in BodyCRC. Its fields are those of
// the record codec's message (internal/message), so the store converts it without copying.
type Message struct {
	Topic   string
	QueueID int32
	Flag    int32
	Body    []byte
	// Properties is the encoded properties string (docs/protocol.md §9.3).
	Properties string
	// SysFlag as sent; the IPv6 host bits are set when the record is encoded, from the hosts.
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	// BodyCRC is the masked CRC of Body.
	BodyCRC int32
}

// record is m as the record codec takes it; Message and message.Message have the same fields,
// which this conversion checks at compile time.
func (m *Message) record() *message.Message { return (*message.Message)(m) }

// PutStatus is the outcome of an append (RocketMQ PutMessageStatus).
type PutStatus int

// Put statuses; String gives RocketMQ's names. FlushSlaveTimeout and SlaveNotAvailable are
// for the replication layer; the store itself does not return them.
const (
	PutOK                  PutStatus = iota // stored (and flushed, with SyncFlush)
	FlushDiskTimeout                        // stored, not known durable within SyncFlushTimeout
	FlushSlaveTimeout                       // (replication) slave did not acknowledge in time
	SlaveNotAvailable                       // (replication) no slave to wait for
	ServiceNotAvailable                     // store closed
	CreateMappedFileFailed                  // new segment could not be created or mapped
	MessageIllegal                          // topic, body or record size out of bounds
	PropertiesSizeExceeded                  // properties over 32767 bytes
	OSPageCacheBusy                         // append lock held too long by another append
	UnknownError
)

var putStatusNames = [...]string{"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT",
	"SLAVE_NOT_AVAILABLE", "SERVICE_NOT_AVAILABLE", "CREATE_MAPEDFILE_FAILED", "MESSAGE_ILLEGAL",
	"PROPERTIES_SIZE_EXCEEDED", "OS_PAGECACHE_BUSY", "UNKNOWN_ERROR"}

func (s PutStatus) String() string {
	if int(s) < len(putStatusNames) {
		return putStatusNames[s]
	}
	return fmt.Sprintf("PutStatus(%d)", int(s))
}

// PutResult describes an append. For a batch, offsets are those of the first message and
// Count messages follow at consecutive queue offsets.
type PutResult struct {
	Status PutStatus
	// PhyOffset is the CommitLog offset of the (first) record.
	PhyOffset int64
	// QueueOffset is the (first) message's queue offset; 0 for prepared and rolled-back
	// transaction messages, which get no ConsumeQueue unit.
	QueueOffset    int64
	StoreTimestamp int64
	// WroteBytes is the total size of the records written.
	WroteBytes int
	// Count is the number of messages written.
	Count     int
	StoreHost netip.AddrPort
	// sizes of a batch's records, for MsgIDs.
	sizes []int
}

// MsgID returns the offset message id (§9.5) of the (first) record. It allocates the string;
// call it only when needed.
func (r *PutResult) MsgID() string { return message.OffsetMsgID(r.StoreHost, r.PhyOffset) }

// MsgIDs returns the comma-joined offset message ids of every record written, as reference
// brokers answer SEND_BATCH_MESSAGE.
func (r *PutResult) MsgIDs() string {
	if len(r.sizes) == 0 {
		if r.Count == 0 {
			return ""
		}
		return r.MsgID()
	}
	var sb strings.Builder
	off := r.PhyOffset
	var buf [56]byte
	for i, n := range r.sizes {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.Write(message.AppendOffsetMsgID(buf[:0], r.StoreHost, off))
		off += int64(n)
	}
	return sb.String()
}

// writable refuses appends on a closed store or a slave (RocketMQ: a slave's store takes
// only replicated bytes), and on a disk fuller than DiskSpaceWarningLevelRatio (RocketMQ
// checkStoreStatus: the DISK_FULL running flag).
func (s *Store) writable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.opts.Slave {
		return ErrSlave
	}
	if s.diskFull.Load() {
		return fmt.Errorf("%w: %.1f%% of the disk of %s is used, appends are refused above %d%% (diskSpaceWarningLevelRatio)",
			ErrDiskFull, s.DiskUsedRatio()*100, s.opts.Dir, s.opts.DiskSpaceWarningLevelRatio)
	}
	return nil
}

// check validates one message and returns its record size.
func (s *Store) check(m *Message) (int, PutStatus, error) {
	if len(m.Body) > s.opts.MaxMessageBytes {
		return 0, MessageIllegal, fmt.Errorf("%w: body of %d bytes, limit %d", ErrMessageTooLarge, len(m.Body), s.opts.MaxMessageBytes)
	}
	if len(m.Properties) > message.MaxPropertiesBytes {
		return 0, PropertiesSizeExceeded, fmt.Errorf("%w: %d bytes, limit %d", ErrPropertiesTooLarge, len(m.Properties), message.MaxPropertiesBytes)
	}
	if len(m.Topic) == 0 || len(m.Topic) > message.MaxTopicBytes {
		return 0, MessageIllegal, fmt.Errorf("%w: topic length %d, want 1..%d", ErrIllegalMessage, len(m.Topic), message.MaxTopicBytes)
	}
	if m.QueueID < 0 {
		return 0, MessageIllegal, fmt.Errorf("%w: queue id %d", ErrIllegalMessage, m.QueueID)
	}
	if err := pathElement(m.Topic); err != nil {
		// It could never be dispatched to a ConsumeQueue (paths.go): refuse it here.
		return 0, MessageIllegal, fmt.Errorf("%w: topic: %w", ErrIllegalMessage, err)
	}
	size, err := message.RecordSize(m.record())
	if err != nil {
		return 0, MessageIllegal, fmt.Errorf("%w: %v", ErrIllegalMessage, err)
	}
	if int64(size)+message.BlankMinBytes > s.opts.SegmentBytes {
		return 0, MessageIllegal, fmt.Errorf("%w: record of %d bytes does not fit a %d-byte segment", ErrMessageTooLarge, size, s.opts.SegmentBytes)
	}
	return size, PutOK, nil
}

// PutMessage appends one message. It computes and sets m.BodyCRC, assigns the next queue
// offset of (m.Topic, m.QueueID) and writes the record straight into the mapped segment; it
// does not allocate. With SyncFlush it then waits for the group commit covering the record,
// unless the message's WAIT property is "false".
//
// err is nil exactly when Status is PutOK. With FlushDiskTimeout the message is stored (the
// offsets are set) but was not known durable in time.
func (s *Store) PutMessage(m *Message) (PutResult, error) {
	r, err := s.append(m)
	if err != nil {
		return r, err
	}
	return s.afterAppend(r, m.Properties)
}

// append is PutMessage without the wait for a SyncFlush.
func (s *Store) append(m *Message) (PutResult, error) {
	r := PutResult{StoreHost: m.StoreHost}
	if err := s.writable(); err != nil {
		r.Status = ServiceNotAvailable
		return r, err
	}
	size, st, err := s.check(m)
	if err != nil {
		r.Status = st
		return r, err
	}
	now := s.opts.clock().UnixMilli()
	if err := s.pageCacheBusy(now); err != nil {
		r.Status = OSPageCacheBusy
		return r, err
	}
	s.prepareQueue(m.Topic, m.QueueID, m.SysFlag)
	m.BodyCRC = message.BodyCRC(m.Body)
	msgs := [1]*Message{m}
	sizes := [1]int{size}
	if err := s.cl.append(msgs[:], sizes[:], size, now, &r); err != nil {
		return s.appendFailed(r, err)
	}
	s.dispatchAfterAppend()
	r.Count = 1
	return r, nil
}

// PutMessages appends a batch (SEND_BATCH_MESSAGE) under one lock: every message must have the
// same topic and queue id; they get consecutive queue offsets and are written contiguously in
// one segment. err is nil exactly when Status is PutOK.
func (s *Store) PutMessages(msgs []*Message) (PutResult, error) {
	var r PutResult
	if len(msgs) == 0 {
		r.Status = MessageIllegal
		return r, fmt.Errorf("%w: empty batch", ErrIllegalMessage)
	}
	r.StoreHost = msgs[0].StoreHost
	if err := s.writable(); err != nil {
		r.Status = ServiceNotAvailable
		return r, err
	}
	sizes := make([]int, len(msgs))
	total := 0
	for i, m := range msgs {
		if m.Topic != msgs[0].Topic || m.QueueID != msgs[0].QueueID {
			r.Status = MessageIllegal
			return r, fmt.Errorf("%w: batch mixes topics or queues", ErrIllegalMessage)
		}
		size, st, err := s.check(m)
		if err != nil {
			r.Status = st
			return r, fmt.Errorf("batch message %d: %w", i, err)
		}
		m.BodyCRC = message.BodyCRC(m.Body)
		sizes[i] = size
		total += size
	}
	if int64(total)+message.BlankMinBytes > s.opts.SegmentBytes {
		r.Status = MessageIllegal
		return r, fmt.Errorf("%w: batch of %d bytes does not fit a %d-byte segment", ErrMessageTooLarge, total, s.opts.SegmentBytes)
	}
	now := s.opts.clock().UnixMilli()
	if err := s.pageCacheBusy(now); err != nil {
		r.Status = OSPageCacheBusy
		return r, err
	}
	s.prepareQueue(msgs[0].Topic, msgs[0].QueueID, msgs[0].SysFlag)
	if err := s.cl.append(msgs, sizes, total, now, &r); err != nil {
		return s.appendFailed(r, err)
	}
	s.dispatchAfterAppend()
	r.Count = len(msgs)
	r.sizes = sizes
	return s.afterAppend(r, msgs[0].Properties)
}

// pageCacheBusy refuses an append while another has held the append lock for longer than
// Options.OSPageCacheBusyTimeout (RocketMQ isOSPageCacheBusy): the caller should retry or
// go to another broker instead of queueing behind it.
func (s *Store) pageCacheBusy(now int64) error {
	if at := s.cl.lockedAt.Load(); at != 0 && now-at > s.opts.OSPageCacheBusyTimeout.Milliseconds() {
		return fmt.Errorf("%w: the append lock has been held for %d ms", ErrPageCacheBusy, now-at)
	}
	return nil
}

func (s *Store) appendFailed(r PutResult, err error) (PutResult, error) {
	switch err {
	case ErrClosed:
		r.Status = ServiceNotAvailable
	default:
		r.Status = CreateMappedFileFailed
	}
	return r, err
}

// afterAppend waits for the flush in SyncFlush mode.
func (s *Store) afterAppend(r PutResult, props string) (PutResult, error) {
	if !s.mustWaitFlush(props) {
		return r, nil
	}
	end := r.PhyOffset + int64(r.WroteBytes)
	if !s.gc.wait(end, s.opts.SyncFlushTimeout) {
		return s.flushTimedOut(r)
	}
	return r, nil
}

// mustWaitFlush reports whether an append with these properties is answered only once durable:
// in SyncFlush mode, unless the message says WAIT=false (then the flusher is only woken).
func (s *Store) mustWaitFlush(props string) bool {
	if s.opts.FlushDiskType != SyncFlush || simBugAckBeforeFlush {
		return false
	}
	if v, ok := message.PropertyValueString(props, message.PropertyWaitStoreMsgOK); ok && v == "false" {
		select {
		case s.gc.wake <- struct{}{}:
		default:
		}
		return false
	}
	return true
}

func (s *Store) flushTimedOut(r PutResult) (PutResult, error) {
	end := r.PhyOffset + int64(r.WroteBytes)
	r.Status = FlushDiskTimeout
	return r, fmt.Errorf("%w: offset %d not durable within %v", ErrFlushTimeout, end, s.opts.SyncFlushTimeout)
}

// PutMessageAsync is PutMessage for a caller that must not hold a goroutine while a SyncFlush
// completes: done runs once with what PutMessage would return, before PutMessageAsync returns
// when there is nothing to wait for, else on a goroutine of the store's once the fsync that
// covers the message returned (or SyncFlushTimeout passed, or the store closed). done must not
// block.
func (s *Store) PutMessageAsync(m *Message, done func(PutResult, error)) {
	r, err := s.append(m)
	if err != nil || !s.mustWaitFlush(m.Properties) {
		done(r, err)
		return
	}
	s.gc.waitAsync(r.PhyOffset+int64(r.WroteBytes), s.opts.SyncFlushTimeout, func(durable bool) {
		if !durable {
			done(s.flushTimedOut(r))
			return
		}
		done(r, nil)
	})
}

// AppendRaw writes replicated CommitLog bytes (a slave following its master) at phyOffset,
// which must equal MaxPhyOffset; the bytes land at the same offsets as on the master,
// blank records included, and are dispatched like local appends. b may end mid-record.
func (s *Store) AppendRaw(phyOffset int64, b []byte) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.epochsBefore(phyOffset + int64(len(b))); err != nil {
		return err
	}
	if err := s.cl.appendRaw(phyOffset, b); err != nil {
		return err
	}
	if s.flushBound {
		// Nobody waits for a replicated block's fsync, but consumers of this store see it
		// only once flushed: flush it now (RocketMQ's GroupCommitService flushes every 10 ms
		// when no appender waits).
		select {
		case s.gc.wake <- struct{}{}:
		default:
		}
	}
	return nil
}
