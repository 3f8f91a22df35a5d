// Package schedule is the broker's scheduled delivery, a service of the broker core
// (internal/broker) in a package of its own: RocketMQ's delay levels (ScheduleMessageService)
// and RocketMQ 5's timer messages (TimerMessageStore). Both hold a message in a system topic
// until its time, then store it in its real topic; one package keeps the rule that decides
// which of the two a send goes to (a DELAY level wins over a timer, as in RocketMQ 5's
// HookUtils.handleScheduleMessage) in one place. Service implements the core's Scheduler
// (installed with Seams.SetScheduler, with the timers' Seams.SetRetentionFloor): the
// core's send path, a transaction's commit and the retry path call it before their put.
//
// What it owns: SCHEDULE_TOPIC_XXXX's cursors and their file <store>/config/delayOffset.json,
// the timer topic rmq_sys_wheel_timer and its cursor (the consumer offset of group
// CID_RMQ_SYS_WHEEL_TIMER, saved by the core), the store's retention floor, and three loops
// (Run): the delivery of each kind, on a master only, and the writer of delayOffset.json. It
// serves one request code, RocketMQ 5's RECALL_MESSAGE (recall.go), which stores a deletion
// marker for a timer message, and writes the recall handle a timer message's send answer
// carries (RecallHandle, through the core's Scheduler; recall.go reads it back); GET_ALL_DELAY_OFFSET and the runtime info are the admin
// service's (internal/broker/admin), reading DelayOffsets; a slave's sync (internal/broker/ha)
// installs its master's cursors through SetDelayOffsets.
//
// Files: service.go (the Scheduler and the Service), delay.go (delay levels), timer.go
// (timers), recall.go (recall handles and RECALL_MESSAGE). Locks: delayService.mu guards the
// level cursors and is a leaf; the timer's wheel is owned by its loop alone, and what others
// read of it (pending, cursor) is atomic.
//
// Delayed delivery (RocketMQ ScheduleMessageService).
//
// A message with delay level L waits in SCHEDULE_TOPIC_XXXX queue L-1; its destination is in
// its REAL_TOPIC and REAL_QID properties. Within one queue every message has the same delay, so
// the queue is in delivery order. The service keeps, per level, a cursor: the queue offset of
// the next message to deliver. One goroutine walks each level from its cursor, and for each
// message whose time has come (store time + the level's delay) stores the real message — same
// body, flag, hosts, times and properties, without DELAY — in its real topic and queue, then
// advances the cursor. It stops at the first message not yet due and sleeps until the earliest
// due time among the levels, at most scheduleIdlePoll (new messages are noticed by polling, or
// at once through notify).
//
// The service saves the cursors to <store>/config/delayOffset.json every
// FlushConsumerOffsetInterval when they moved, at once when a slave's sync replaced them, and
// when the broker stops (Close). A cursor
// only moves past a message once its real copy is stored, so after a crash the service resumes
// from the last saved cursor and may deliver a message twice, never zero times (at least once,
// as RocketMQ).
//
// Timer messages (RocketMQ 5 TimerMessageStore): delivery at an arbitrary time.
//
// A send carrying TIMER_DELIVER_MS (absolute), TIMER_DELAY_SEC or TIMER_DELAY_MS (relative to
// the broker's clock) whose time is in the future is stored in rmq_sys_wheel_timer queue 0 with
// TIMER_OUT_MS (the delivery time) and its destination in REAL_TOPIC / REAL_QID, as RocketMQ's
// HookUtils.transformTimerMessage does. The CommitLog is then the only durable copy: there is no
// TimerLog or TimerWheel file.
//
// Why not RocketMQ's wheel and log on disk: they duplicate what the CommitLog and the
// ConsumeQueue of the timer topic already make durable, and need their own checkpoint and
// recovery. Here the timer service reads the timer queue from a cursor into memory, a map from
// time slot to entries plus a min-heap of slots (24 bytes a message, one goroutine and one
// time.Timer for all), and on restart rebuilds it by reading the queue again from the cursor.
//
// Slots are half a TimerPrecision wide and a slot is delivered at its end, so a message is never
// early and is late by at most half the precision plus the time to find, put and dispatch it,
// which the other half leaves room for (RocketMQ rounds down to its 1 s precision and may
// deliver early). New messages are found by polling the queue's end every quarter precision.
//
// The cursor is the lowest queue offset not yet delivered, kept as the consumer offset of group
// CID_RMQ_SYS_WHEEL_TIMER; messages are delivered out of queue order, so offsets past the cursor
// may be delivered already. After a restart such a message, if it was due before the broker
// started, is first looked up in its real topic by its UNIQ_KEY through the index: a delivered
// copy carries the same TIMER_OUT_MS and a TIMER_DEQUEUE_MS, and is not stored again.
//
// A deletion marker (a timer message with TIMER_DEL_UNIQKEY "<real topic>+<UNIQ_KEY>", which
// RECALL_MESSAGE stores for the time its handle names, the message's plus 1 ms) is not
// delivered: the scan records its key until the slot after the marker's is done, and a
// message of that key due by then is dropped instead of delivered. A marker is marked done at
// once; the cursor still cannot pass the message it deletes, which was stored before it, so
// after a restart the scan from the cursor finds the marker again.
package schedule
