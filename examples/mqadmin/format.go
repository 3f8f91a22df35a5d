package main

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/protocol"
)

// humanTime formats like RocketMQ's UtilAll.timeMillisToHumanString2, in local time.
func humanTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05,000")
}

// mqadminTimeLayout is UtilAll.YYYY_MM_DD_HH_MM_SS_SSS, which resetOffsetByTime accepts.
// Its Go reading has a dot before the milliseconds.
const (
	mqadminTimeLayout = "2006-01-02#15:04:05:000"
	goTimeLayout      = "2006-01-02#15:04:05.000"
)

// parseTimestamp reads resetOffsetByTime's -s: "now" (the zero time: the end of each queue),
// epoch milliseconds, or yyyy-MM-dd#HH:mm:ss:SSS in local time.
func parseTimestamp(s string) (time.Time, int64, error) {
	if s == "now" {
		return time.Time{}, -1, nil
	}
	var ms int64
	if _, err := fmt.Sscan(s, &ms); err == nil && fmt.Sprint(ms) == s {
		return time.UnixMilli(ms), ms, nil
	}
	// Go reads fractional seconds only after a dot or comma, so the last colon becomes a dot.
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		i = len(s)
	}
	t, err := time.ParseInLocation(goTimeLayout, s[:i]+"."+s[min(i+1, len(s)):], time.Local)
	if err != nil {
		return time.Time{}, 0, usageErrorf("-s: %q is not now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS", s)
	}
	return t, t.UnixMilli(), nil
}

// front is UtilAll.frontStringAtLeast: s cut to at most n bytes.
func front(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// versionDesc names a client version as RocketMQ's MQVersion.getVersionDesc does.
func versionDesc(v int) string { return protocol.VersionDesc(v) }

// messageJSON is a message as -json prints it.
type messageJSON struct {
	MsgID           string            `json:"msgId"`
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	Tags            string            `json:"tags"`
	Keys            []string          `json:"keys"`
	BrokerName      string            `json:"brokerName"`
	QueueID         int               `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	BornTimestamp   int64             `json:"bornTimestamp"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	SysFlag         int32             `json:"sysFlag"`
	Properties      map[string]string `json:"properties"`
	Body            string            `json:"body"`
}

func toMessageJSON(m *consumer.Message) messageJSON {
	return messageJSON{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Tags: m.Tags, Keys: m.Keys,
		BrokerName: m.Queue.BrokerName, QueueID: m.Queue.QueueID, QueueOffset: m.QueueOffset,
		CommitLogOffset: m.CommitLogOffset, ReconsumeTimes: m.ReconsumeTimes, BornTimestamp: m.BornTime.UnixMilli(),
		StoreTimestamp: m.StoreTime.UnixMilli(), BornHost: hostString(m.BornHost), StoreHost: hostString(m.StoreHost),
		SysFlag: m.SysFlag, Properties: m.Properties, Body: string(m.Body)}
}

func hostString(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// printMessage prints one message as mqadmin's queryMsgById does (queryMsgByUniqueKey without
// the OffsetID line), with the body inline instead of in a file under /tmp.
func printMessage(b *strings.Builder, m *consumer.Message, offsetID bool) {
	props := make([]string, 0, len(m.Properties))
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		props = append(props, k+"="+m.Properties[k])
	}
	row := func(name string, v any) { fmt.Fprintf(b, "%-20s %v\n", name, v) }
	if offsetID {
		row("OffsetID:", m.OffsetMsgID)
	}
	row("Topic:", m.Topic)
	row("Tags:", "["+m.Tags+"]")
	row("Keys:", "["+strings.Join(m.Keys, " ")+"]")
	row("Queue ID:", m.Queue.QueueID)
	row("Queue Offset:", m.QueueOffset)
	row("CommitLog Offset:", m.CommitLogOffset)
	row("Reconsume Times:", m.ReconsumeTimes)
	row("Born Timestamp:", humanTime(m.BornTime))
	row("Store Timestamp:", humanTime(m.StoreTime))
	row("Born Host:", hostString(m.BornHost))
	row("Store Host:", hostString(m.StoreHost))
	row("System Flag:", m.SysFlag)
	row("Properties:", "{"+strings.Join(props, ", ")+"}")
	row("Message Body:", string(m.Body))
}
