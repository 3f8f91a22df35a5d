package storage

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Defaults, as in RocketMQ's MessageStoreConfig.
const (
	DefaultSegmentBytes          = 1 << 30
	DefaultConsumeQueueUnits     = 300_000
	DefaultFlushIntervalCommit   = 500 * time.Millisecond
	DefaultFlushIntervalCQ       = time.Second
	DefaultFlushCQLeastPages     = 2
	DefaultFlushCQThorough       = 60 * time.Second
	DefaultSyncFlushTimeout      = 5 * time.Second
	DefaultMaxMessageBytes       = 4 << 20
	DefaultFileReservedTime      = 72 * time.Hour
	DefaultDeleteWhen            = "04"
	DefaultDiskMaxUsedSpaceRatio = 75
	// DefaultDiskSpaceCleanForciblyRatio and DefaultDiskSpaceWarningLevelRatio are RocketMQ
	// 4.9's rocketmq.broker.diskSpaceCleanForciblyRatio (0.85) and
	// diskSpaceWarningLevelRatio (0.90), in percent.
	DefaultDiskSpaceCleanForciblyRatio = 85
	DefaultDiskSpaceWarningLevelRatio  = 90
	DefaultCleanResourceInterval       = 10 * time.Second
	DefaultMaxHashSlotNum              = 5_000_000
	DefaultMaxIndexNum                 = 20_000_000
	DefaultMaxTransferBytes            = 256 << 10
	DefaultCheckpointInterval          = time.Second
	DefaultDeleteFilesBatchMax         = 10
)

// Options configures a Store. The zero value of every field means the RocketMQ default.
type Options struct {
	// Dir is the store root (RocketMQ storePathRootDir). Required.
	Dir string
	// SegmentBytes is the size of a CommitLog segment file (mappedFileSizeCommitLog),
	// default 1 GiB. Tests use 64 KiB.
	SegmentBytes int64
	// ConsumeQueueUnits is the number of 20-byte units per ConsumeQueue file
	// (mappedFileSizeConsumeQueue/20), default 300,000.
	ConsumeQueueUnits int
	// FlushDiskType is AsyncFlush (default) or SyncFlush.
	FlushDiskType FlushDiskType
	// FlushIntervalCommitLog is the async flusher's period (flushIntervalCommitLog), 500 ms.
	FlushIntervalCommitLog time.Duration
	// FlushIntervalConsumeQueue is the period of ConsumeQueue and index flushes and of the
	// checkpoint (flushIntervalConsumeQueue), 1 s.
	FlushIntervalConsumeQueue time.Duration
	// FlushConsumeQueueLeastPages is how many 4 KiB pages a ConsumeQueue must have written
	// since its last flush before a periodic flush syncs it (flushConsumeQueueLeastPages, 2);
	// every FlushConsumeQueueThoroughInterval (flushConsumeQueueThoroughInterval, 60 s) a flush
	// syncs every queue with anything unsynced. Without it, every queue that received a
	// message syncs every second: a flood of new topics is an fsync per topic per second. The
	// checkpoint never claims a unit durable that was not synced: its dispatched offset stays
	// at or before the first unsynced unit of every queue, and recovery dispatches again from
	// there. Negative: sync every queue every time.
	FlushConsumeQueueLeastPages       int
	FlushConsumeQueueThoroughInterval time.Duration
	// ReadUnCommitted (readUnCommitted, false) lets a SyncFlush store show consumers what it
	// wrote before the fsync that makes it durable returned. Without it a SyncFlush store
	// dispatches only the flushed log (RocketMQ 5.3's getConfirmOffset: flushedWhere under
	// SYNC_FLUSH): a consumer that read, and committed past, a message a power cut then erased
	// would skip the acknowledged message stored at its offset after the restart (RocketMQ
	// issue 8239). It has no effect with AsyncFlush, whose appends are not waited for.
	ReadUnCommitted bool
	// SyncFlushTimeout bounds how long a sync-flush append waits for its fsync
	// (syncFlushTimeout), 5 s; past it the append answers FlushDiskTimeout.
	SyncFlushTimeout time.Duration
	// MaxMessageBytes is the largest body accepted (maxMessageSize), 4 MiB.
	MaxMessageBytes int
	// OSPageCacheBusyTimeout: while an append has held the append lock longer than this,
	// other appends are refused with OSPageCacheBusy (osPageCacheBusyTimeOutMills), 1 s.
	OSPageCacheBusyTimeout time.Duration
	// MaxTransferBytes caps the bytes one GetMessage returns when the caller passes 0
	// (maxTransferBytesOnMessageInMemory), 256 KiB.
	MaxTransferBytes int
	// AccessMessageInMemoryMaxRatio is the share of physical memory, in percent, that pulls
	// may lag behind the log's end before GetResult suggests a slave
	// (accessMessageInMemoryMaxRatio), 40.
	AccessMessageInMemoryMaxRatio int
	// FileReservedTime is how long CommitLog segments are kept (fileReservedTime), 72 h.
	FileReservedTime time.Duration
	// DeleteWhen lists the hours (local time, "04" or "04;16") at which expired segments are
	// deleted (deleteWhen), "04".
	DeleteWhen string
	// DiskMaxUsedSpaceRatio is the disk use, in percent, past which expired segments are
	// deleted whatever the hour, oldest first (diskMaxUsedSpaceRatio), 75.
	DiskMaxUsedSpaceRatio int
	// DiskSpaceCleanForciblyRatio is the disk use, in percent, past which the oldest segments
	// are deleted whether expired or not (diskSpaceCleanForciblyRatio), 85, unless
	// DisableCleanFileForcibly (cleanFileForciblyEnable = !DisableCleanFileForcibly).
	DiskSpaceCleanForciblyRatio int
	DisableCleanFileForcibly    bool
	// DiskSpaceWarningLevelRatio is the disk use, in percent, past which the store refuses
	// appends (ServiceNotAvailable, ErrDiskFull) until a retention round measures it at or
	// below again (diskSpaceWarningLevelRatio; RocketMQ's DISK_FULL running flag), 90.
	DiskSpaceWarningLevelRatio int
	// CleanResourceInterval is how often retention runs (cleanResourceInterval), 10 s.
	CleanResourceInterval time.Duration
	// DeleteFilesBatchMax bounds the segments deleted per retention round, 10.
	DeleteFilesBatchMax int
	// DisableCRCOnRecover turns off the body CRC check during crash recovery (RocketMQ
	// checkCRCOnRecover = !DisableCRCOnRecover; checking is the default).
	DisableCRCOnRecover bool
	// DisableIndex turns off the key index (messageIndexEnable = !DisableIndex).
	DisableIndex bool
	// MaxHashSlotNum and MaxIndexNum size an index file (maxHashSlotNum 5,000,000,
	// maxIndexNum 20,000,000).
	MaxHashSlotNum int
	MaxIndexNum    int
	// Slave marks a slave store: it refuses PutMessage (ServiceNotAvailable, ErrSlave) and
	// takes replicated bytes through AppendRaw; GetMessage does not correct offsets (the
	// requested offset is echoed), unless OffsetCheckInSlave is set.
	Slave              bool
	OffsetCheckInSlave bool
	// Truncate makes Open cut the CommitLog at TruncateTo, after recovery, when the log is
	// longer: what was dispatched past the cut (ConsumeQueue units, index entries) goes as
	// for a torn tail, the epoch history is truncated there (TruncateEpochs), and
	// RecoveryReport says so. A broker that must follow a new master sets it to the
	// ConsistentPoint of the two epoch histories. TruncateTo must be a record boundary unless
	// Slave is set (a slave's copy may end mid-record: replication continues from its end).
	// A cut below MinPhyOffset empties the log, which then continues at the first segment
	// boundary at or after TruncateTo, as a log whose every segment was deleted does.
	Truncate   bool
	TruncateTo int64
	// DelayLevels are the delays of DELAY levels 1, 2, ... (messageDelayLevel), default
	// 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h. A message in
	// SCHEDULE_TOPIC_XXXX gets store time + its level's delay as ConsumeQueue tag code.
	DelayLevels []time.Duration
	// OnDispatch, if set, is called by the dispatcher after a message's ConsumeQueue unit is
	// written (never under the append lock). It runs on the dispatcher goroutine or on the
	// goroutine that appended the message, after the append: keep it short and non-blocking
	// (the broker uses it to wake held long-poll pulls), and do not call DeleteTopics from it
	// (it takes the dispatcher's lock).
	OnDispatch func(DispatchEvent)
	// RetentionFloor, if set, returns the lowest CommitLog offset still needed by the broker
	// (its oldest pending timer message): time-based retention keeps the segment holding it
	// and those after, whatever their age. Only a disk past its force-clean threshold deletes
	// it, with a warning. It is called from the retention goroutine: keep it cheap.
	RetentionFloor func() int64
	// ConsumedOffsets, if set, returns the lowest offset any consumer group has committed, by
	// topic and queue. A retention round that deleted unexpired segments calls it once to log
	// how many messages went that a group had not consumed yet.
	ConsumedOffsets func() map[string]map[int32]int64
	// Logger receives structured logs with component=storage; nil means silent.
	Logger *zerolog.Logger

	// Test hooks; see fileops.go. Set only by tests in this package.
	clock     func() time.Time
	ops       *fileOps
	diskUsage func(dir string) (float64, error)
	// dispatchPoll is the dispatcher's fallback poll period (it is woken by appends), 100 ms.
	dispatchPoll time.Duration
}

// DispatchEvent describes one message made visible in a ConsumeQueue.
type DispatchEvent struct {
	Topic          string
	QueueID        int32
	QueueOffset    int64
	TagsCode       int64
	StoreTimestamp int64
	PhyOffset      int64
	Size           int32
}

func (o Options) withDefaults() Options {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.ConsumeQueueUnits == 0 {
		o.ConsumeQueueUnits = DefaultConsumeQueueUnits
	}
	if o.FlushIntervalCommitLog == 0 {
		o.FlushIntervalCommitLog = DefaultFlushIntervalCommit
	}
	if o.FlushIntervalConsumeQueue == 0 {
		o.FlushIntervalConsumeQueue = DefaultFlushIntervalCQ
	}
	if o.FlushConsumeQueueLeastPages == 0 {
		o.FlushConsumeQueueLeastPages = DefaultFlushCQLeastPages
	}
	if o.FlushConsumeQueueThoroughInterval == 0 {
		o.FlushConsumeQueueThoroughInterval = DefaultFlushCQThorough
	}
	if o.SyncFlushTimeout == 0 {
		o.SyncFlushTimeout = DefaultSyncFlushTimeout
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.FlushDiskType == "" {
		o.FlushDiskType = AsyncFlush
	}
	if o.AccessMessageInMemoryMaxRatio == 0 {
		o.AccessMessageInMemoryMaxRatio = 40
	}
	if o.OSPageCacheBusyTimeout == 0 {
		o.OSPageCacheBusyTimeout = time.Second
	}
	if o.MaxTransferBytes == 0 {
		o.MaxTransferBytes = DefaultMaxTransferBytes
	}
	if o.FileReservedTime == 0 {
		o.FileReservedTime = DefaultFileReservedTime
	}
	if o.DeleteWhen == "" {
		o.DeleteWhen = DefaultDeleteWhen
	}
	if o.DiskMaxUsedSpaceRatio == 0 {
		o.DiskMaxUsedSpaceRatio = DefaultDiskMaxUsedSpaceRatio
	}
	if o.DiskSpaceCleanForciblyRatio == 0 {
		o.DiskSpaceCleanForciblyRatio = DefaultDiskSpaceCleanForciblyRatio
	}
	if o.DiskSpaceWarningLevelRatio == 0 {
		o.DiskSpaceWarningLevelRatio = DefaultDiskSpaceWarningLevelRatio
	}
	if o.CleanResourceInterval == 0 {
		o.CleanResourceInterval = DefaultCleanResourceInterval
	}
	if o.DeleteFilesBatchMax == 0 {
		o.DeleteFilesBatchMax = DefaultDeleteFilesBatchMax
	}
	if o.MaxHashSlotNum == 0 {
		o.MaxHashSlotNum = DefaultMaxHashSlotNum
	}
	if o.MaxIndexNum == 0 {
		o.MaxIndexNum = DefaultMaxIndexNum
	}
	if len(o.DelayLevels) == 0 {
		o.DelayLevels = DefaultDelayLevels
	}
	if o.Logger == nil {
		nop := zerolog.Nop()
		o.Logger = &nop
	}
	if o.ops == nil {
		var clock func() time.Time
		o.ops, clock = hookedFileOps(o.Dir)
		if o.clock == nil {
			o.clock = clock
		}
	}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.dispatchPoll == 0 {
		o.dispatchPoll = 100 * time.Millisecond
	}
	if o.diskUsage == nil {
		o.diskUsage = diskUsedRatio
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("storage: Options.Dir is required"))
	}
	pg := int64(os.Getpagesize())
	if o.SegmentBytes < pg || o.SegmentBytes%pg != 0 {
		errs = append(errs, fmt.Errorf("storage: SegmentBytes %d must be a positive multiple of the page size %d", o.SegmentBytes, pg))
	}
	if o.ConsumeQueueUnits < 1 {
		errs = append(errs, fmt.Errorf("storage: ConsumeQueueUnits %d must be positive", o.ConsumeQueueUnits))
	}
	if o.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("storage: MaxMessageBytes %d must not be negative", o.MaxMessageBytes))
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"DiskMaxUsedSpaceRatio", o.DiskMaxUsedSpaceRatio}, {"DiskSpaceCleanForciblyRatio", o.DiskSpaceCleanForciblyRatio},
		{"DiskSpaceWarningLevelRatio", o.DiskSpaceWarningLevelRatio}} {
		if r.v < 0 || r.v > 100 {
			errs = append(errs, fmt.Errorf("storage: %s %d not in [0, 100] (percent of the disk)", r.name, r.v))
		}
	}
	if err := o.FlushDiskType.Check(); err != nil {
		errs = append(errs, fmt.Errorf("storage: %w", err))
	}
	if _, err := parseDeleteWhen(o.DeleteWhen); err != nil {
		errs = append(errs, err)
	}
	if o.Truncate && o.TruncateTo < 0 {
		errs = append(errs, fmt.Errorf("storage: TruncateTo %d must not be negative", o.TruncateTo))
	}
	if o.MaxHashSlotNum < 1 || o.MaxIndexNum < 1 {
		errs = append(errs, errors.New("storage: MaxHashSlotNum and MaxIndexNum must be positive"))
	}
	return errors.Join(errs...)
}

// parseDeleteWhen parses "04" or "04;16" into a set of hours.
func parseDeleteWhen(s string) (map[int]bool, error) {
	hours := make(map[int]bool)
	for _, p := range strings.Split(s, ";") {
		h, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("storage: DeleteWhen %q: want hours 00..23 separated by ';'", s)
		}
		hours[h] = true
	}
	return hours, nil
}
