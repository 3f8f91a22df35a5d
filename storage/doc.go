// Package storage is the message store: RocketMQ 4.x's CommitLog, ConsumeQueues, key index,
// flush, recovery and retention, with RocketMQ's on-disk layout, independent of the network.
//
// # Layout
//
//	<Dir>/commitlog/<20-digit start offset>                 CommitLog segments (SegmentBytes each)
//	<Dir>/consumequeue/<topic>/<queueId>/<20-digit offset>  ConsumeQueue files (ConsumeQueueUnits x 20 B, sparse:
//	                                                        blocks reserved ahead of the writer, segment.reserveTo)
//	<Dir>/index/<yyyyMMddHHmmssSSS>                         key index files
//	<Dir>/config/*.json                                     broker metadata (WriteJSONFile)
//	<Dir>/config/*.journal                                  changes since the .json was written (journal.go)
//	<Dir>/checkpoint                                        what is durable (checkpoint.go)
//	<Dir>/manifest                                          each queue's and index file's durable extent (manifest.go)
//	<Dir>/abort                                             present while the store is open
//	<Dir>/lock                                              flock: one store per directory
//
// # CommitLog record
//
// Every message is stored as one record, RocketMQ's format byte for byte (docs/protocol.md §9.1);
// a pull returns these bytes unchanged. Integers are big-endian. IPv4 hosts shown; a host is
// 16+4 bytes instead of 4+4 when SYSFLAG has 0x10 (born) or 0x20 (store).
//
//	+0   TOTALSIZE        4   whole record
//	+4   MAGICCODE        4   0xDAA320A7
//	+8   BODYCRC          4   CRC-32 IEEE of BODY & 0x7FFFFFFF
//	+12  QUEUEID          4
//	+16  FLAG             4
//	+20  QUEUEOFFSET      8   position in the ConsumeQueue
//	+28  PHYSICALOFFSET   8   position of this record in the CommitLog
//	+36  SYSFLAG          4
//	+40  BORNTIMESTAMP    8
//	+48  BORNHOST         8   IPv4 (4) + port (4)      [20 for IPv6]
//	+56  STORETIMESTAMP   8
//	+64  STOREHOST        8   IPv4 (4) + port (4)      [20 for IPv6]
//	+72  RECONSUMETIMES   4
//	+76  PREPARED TX OFF  8
//	+84  BODYLENGTH       4   B
//	+88  BODY             B
//	     TOPICLENGTH      1   T
//	     TOPIC            T
//	     PROPERTIESLENGTH 2   P
//	     PROPERTIES       P   name 0x01 value 0x02 ...
//
// A record never spans segments. When the next record (plus 8 bytes) does not fit, the tail of
// the segment becomes a blank record, TOTALSIZE = bytes left, MAGICCODE = 0xCBD43194, and the
// writer moves to the next segment.
//
// # ConsumeQueue unit
//
// Unit i of a queue describes the message at queue offset i; file names are the byte offset of
// their first unit (queue offset × 20).
//
//	+0   COMMITLOG OFFSET 8
//	+8   SIZE             4   record size (0x7FFFFFFF in blank units before a queue's start)
//	+12  TAGS CODE        8   Java String.hashCode of TAGS, sign-extended; for
//	                          SCHEDULE_TOPIC_XXXX, the delivery time in ms
//
// # Services
//
// Open builds and recovers; Run runs, each on its own goroutine under one errgroup:
//   - the flusher: async, fsync every FlushIntervalCommitLog; sync, group commit — appenders
//     queue a waiter for their end offset, one fsync releases every waiter it covers (sync
//     appends write the file rather than the mapping: commitLog.writeLocked);
//   - the dispatcher (reput): reads records behind the writer (with SyncFlush, behind the last
//     fsync, unless Options.ReadUnCommitted), woken by each append and each fsync, appends
//     ConsumeQueue units, indexes keys and calls Options.OnDispatch;
//   - the checkpointer: flushes ConsumeQueues and the index and writes the checkpoint;
//   - retention: measures the disk, refuses appends above DiskSpaceWarningLevelRatio (until a
//     round measures less), deletes expired segments (above DiskSpaceCleanForciblyRatio the
//     oldest, expired or not) and the ConsumeQueue and index files behind them;
//   - the allocator: creates the next CommitLog segment once the active one is half written
//     (RocketMQ's AllocateMappedFileService keeps it from the first append), and keeps the log's
//     next 32 MiB ahead of the writer prefaulted: read-populated (MADV_POPULATE_READ), so
//     appends find the pages in the page cache and the page tables instead of having the
//     kernel allocate and zero them under the append lock; the pages stay clean, nothing is
//     written to disk for them. Woken by the appenders at a roll and every 4 MiB.
//
// # Recovery
//
// Open reads the checkpoint and the manifest and looks for the abort marker. After a clean
// Close with a readable manifest it trusts the checkpoint's CommitLog end (after checking
// nothing lies past it) and only reads the last file of each ConsumeQueue. After a crash, or
// when the manifest is missing or damaged, it validates every record from the segment
// holding the checkpoint's durable offset: total size, magic, body CRC (unless
// DisableCRCOnRecover), PHYSICALOFFSET equal to the record's position, sane queue id and
// offset, and a correct blank record at segment ends. The log is cut at the first invalid
// record and the rest of that segment is zeroed (so stale records cannot resurface later);
// segments after it are deleted. ConsumeQueue units past the cut are cleared, units in the
// re-validated range are checked against their records, and records are dispatched again
// from the checkpoint's dispatched offset.
//
// Either way, every ConsumeQueue and index file is compared with the manifest, written after
// the checkpointer's flushes (when it changed) and at Close: each queue's durable unit count
// and the CommitLog end of its last unit, each index file's entry count. A queue whose files
// are inconsistent (a file missing, a file shorter than its fixed size, a gap), that is
// behind its manifest entry (its last file or its directory gone) or whose unit at the
// entry's end points elsewhere is rebuilt from the whole log; so is the index when a file it
// lists is missing, cut or holds fewer entries. A queue behind its entry only by units whose
// records lie past a CommitLog cut is not rebuilt, nor one whose missing units' records
// retention deleted (it restarts at the entry's count, never reusing offsets).
// RecoveryReport lists every repair; the same is logged. Limits: data before the safe point
// is not re-validated (as in RocketMQ); without a readable manifest, a queue's lost last file
// is noticed only if that queue has records after the checkpoint; a unit damaged in place
// within a queue's files is not found at open but skipped by reads (each is checked against
// its record); index entries past a cut stay in the index files but are dropped at lookup,
// where every hit is verified against its record.
//
// # Ownership of returned bytes
//
// GetMessage returns slices of mapped segments. Segments are reference counted: a GetResult
// (and a CommitLogView) holds references until Release, so retention and Close can drop a
// segment at any time without invalidating bytes a reader holds; the last release unmaps it.
// LookMessageByOffset and QueryMessage return copies.
//
// # Lock order
//
//	commitLog.mu (append lock) -> commitLog.nextMu -> segmentList.mu
//	Store.dispatchMu -> queueTable.mu -> segmentList.mu; Store.dispatchMu -> indexService.mu
//	Store.dispatchMu -> segmentList.createMu -> segmentList.mu (an appender, prepareQueue,
//	takes createMu without dispatchMu, and the append lock only before, never with it)
//	Store.ckptMu -> segmentList.mu, indexService.mu; Store.dispatchMu -> Store.ckptMu (DeleteTopics)
//
// Under commitLog.mu the only I/O is page faults (write-protect faults on prefaulted pages;
// first-touch faults where the writer outruns the allocator), and on a roll creating the next
// segment (about 3 ms for 1 GiB: fallocate and mmap) if the allocator could not create it. fsync runs outside every lock. OnDispatch is
// called with dispatchMu held, never with the append lock, on the dispatcher goroutine or on
// an appender's after its append (dispatchAfterAppend); Close's final dispatch may call it
// after Run has returned.
//
// # Example
//
//	st, err := storage.Open(storage.Options{Dir: dir})
//	if err != nil { ... }
//	go st.Run(ctx)
//	defer st.Close()
//	res, err := st.PutMessage(&storage.Message{Topic: "T", Body: body, StoreHost: host})
//	got := st.GetMessage("group", "T", 0, 0, 32, 0, nil)
//	defer got.Release()
package storage
