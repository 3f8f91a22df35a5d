package mq_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/assignment"
	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/internal/proxy"
	"github.com/mqgo/mq/internal/replication"
	"github.com/mqgo/mq/producer"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/mqgo/mq/storage"
)

// differencesDoc is the document whose opening sentence says every default it does not list
// as different is RocketMQ's.
const differencesDoc = "docs/rocketmq-differences.md"

// codeDefaults are the defaults the Defaults table of differencesDoc states, by the name its
// code column gives them: the constants, or what a zero field becomes.
func codeDefaults(t *testing.T) map[string]any {
	t.Helper()
	tlsMode, err := remoting.ParseTLSMode(string(mq.Options{}.Security.TLSMode))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{
		"mq.DefaultListen":                                     mq.DefaultListen,
		"mq.DefaultStoreDir":                                   mq.DefaultStoreDir,
		"mq.DefaultClusterName":                                mq.DefaultClusterName,
		"mq.DefaultBrokerName":                                 mq.DefaultBrokerName,
		"storage.DefaultRole(0)":                               string(storage.DefaultRole(0)),
		"mq.Options.Security.TLSMode":                          string(tlsMode),
		"mq.DefaultServerWorkerThreads":                        mq.DefaultServerWorkerThreads,
		"mq.DefaultServerQueueCapacity":                        mq.DefaultServerQueueCapacity,
		"mq.DefaultStartTimeout":                               mq.DefaultStartTimeout,
		"mq.DefaultACLWatchInterval":                           mq.DefaultACLWatchInterval,
		"mq.DefaultScanNotActiveBrokerInterval":                mq.DefaultScanNotActiveBrokerInterval,
		"mq.DefaultBrokerChannelExpiredTime":                   mq.DefaultBrokerChannelExpiredTime,
		"mq.DefaultChannelMaxIdleTime":                         mq.DefaultChannelMaxIdleTime,
		"remoting.DefaultMaxFrameBytes":                        remoting.DefaultMaxFrameBytes,
		"remoting.DefaultMaxHeaderBytes":                       remoting.DefaultMaxHeaderBytes,
		"remoting.DefaultMaxExtFields":                         remoting.DefaultMaxExtFields,
		"remoting.DefaultMaxPendingWriteBytes":                 remoting.DefaultMaxPendingWriteBytes,
		"remoting.DefaultMaxConnections":                       remoting.DefaultMaxConnections,
		"remoting.DefaultMaxServerRequests":                    remoting.DefaultMaxServerRequests,
		"broker.DefaultTopicQueueNums":                         broker.DefaultTopicQueueNums,
		"config.DefaultRegisterNameServerPeriod":               config.DefaultRegisterNameServerPeriod,
		"config.DefaultRegisterNameServerPeriodMin":            config.DefaultRegisterNameServerPeriodMin,
		"config.DefaultFlushConsumerOffsetInterval":            config.DefaultFlushConsumerOffsetInterval,
		"config.DefaultChannelExpiredTimeout":                  config.DefaultChannelExpiredTimeout,
		"config.DefaultRebalanceLockMaxLiveTime":               config.DefaultRebalanceLockMaxLiveTime,
		"broker.DefaultShortPollingTime":                       broker.DefaultShortPollingTime,
		"config.DefaultTransactionTimeout":                     config.DefaultTransactionTimeout,
		"config.DefaultTransactionCheckMax":                    config.DefaultTransactionCheckMax,
		"config.DefaultTransactionCheckInterval":               config.DefaultTransactionCheckInterval,
		"config.DefaultPopReviveInterval":                      config.DefaultPopReviveInterval,
		"config.DefaultPopReviveQueueNum":                      config.DefaultPopReviveQueueNum,
		"config.DefaultPopFromRetryProbability":                config.DefaultPopFromRetryProbability,
		"config.DefaultPopMaxPollingSize":                      config.DefaultPopMaxPollingSize,
		"config.DefaultPopPollingSize":                         config.DefaultPopPollingSize,
		"config.DefaultPopCkMaxBufferSize":                     config.DefaultPopCkMaxBufferSize,
		"config.DefaultPopMaxInvisibleTime":                    config.DefaultPopMaxInvisibleTime,
		"!mq.Options.Pop.DisableBufferMerge":                   !mq.Options{}.Pop.DisableBufferMerge,
		"config.DefaultPopCkStayBufferTime":                    config.DefaultPopCkStayBufferTime,
		"config.DefaultTimerPrecision":                         config.DefaultTimerPrecision,
		"config.DefaultTimerMaxDelay":                          config.DefaultTimerMaxDelay,
		"config.DefaultMaxLongPollingSuspend":                  config.DefaultMaxLongPollingSuspend,
		"config.DefaultMaxHeldPullsPerConnection":              config.DefaultMaxHeldPullsPerConnection,
		"config.DefaultMaxHeldPulls":                           config.DefaultMaxHeldPulls,
		"config.DefaultMaxTopics":                              config.DefaultMaxTopics,
		"config.DefaultMaxSubscriptionGroups":                  config.DefaultMaxSubscriptionGroups,
		"config.DefaultAutoCreateTopicBurst":                   config.DefaultAutoCreateTopicBurst,
		"config.DefaultAutoCreateTopicRate":                    config.DefaultAutoCreateTopicRate,
		"route.DefaultMaxQueueNums":                            route.DefaultMaxQueueNums,
		"config.DefaultReregisterGrace":                        config.DefaultReregisterGrace,
		"config.DefaultMessageRequestMode":                     config.DefaultMessageRequestMode,
		"config.DefaultPopShareQueueNum":                       config.DefaultPopShareQueueNum,
		"assignment.DefaultRoutePollInterval":                  assignment.DefaultRoutePollInterval,
		"mq.Options.GRPC.Listen":                               offUnlessSet(mq.Options{}.GRPC.Listen),
		"proxy.DefaultMaxRecvBytes":                            proxy.DefaultMaxRecvBytes,
		"proxy.DefaultChannelExpiredTimeout":                   proxy.DefaultChannelExpiredTimeout,
		"proxy.DefaultMaxClients":                              proxy.DefaultMaxClients,
		"proxy.DefaultMaxConcurrentStreams":                    proxy.DefaultMaxConcurrentStreams,
		"proxy.DefaultMaxHeaderListBytes":                      proxy.DefaultMaxHeaderListBytes,
		"proxy.DefaultGrpcClientProducerMaxAttempts":           proxy.DefaultGrpcClientProducerMaxAttempts,
		"proxy.DefaultGrpcClientConsumerLongPollingBatchSize":  proxy.DefaultGrpcClientConsumerLongPollingBatchSize,
		"proxy.DefaultGrpcClientConsumerMaxLongPollingTimeout": proxy.DefaultGrpcClientConsumerMaxLongPollingTimeout,
		"proxy.DefaultGrpcClientConsumerMinLongPollingTimeout": proxy.DefaultGrpcClientConsumerMinLongPollingTimeout,
		"proxy.DefaultInvisibleTime":                           proxy.DefaultInvisibleTime,
		"proxy.DefaultMinInvisibleTimeForRecv":                 proxy.DefaultMinInvisibleTimeForRecv,
		"proxy.DefaultUserPropertyMaxNum":                      proxy.DefaultUserPropertyMaxNum,
		"proxy.DefaultMaxUserPropertySize":                     proxy.DefaultMaxUserPropertySize,
		"proxy.DefaultMaxMessageGroupSize":                     proxy.DefaultMaxMessageGroupSize,
		"proxy.DefaultMaxDelayTime":                            proxy.DefaultMaxDelayTime,
		"proxy.DefaultMaxTransactionRecovery":                  proxy.DefaultMaxTransactionRecovery,
		"storage.DefaultSegmentBytes":                          storage.DefaultSegmentBytes,
		"storage.DefaultConsumeQueueUnits":                     storage.DefaultConsumeQueueUnits,
		"storage.DefaultFlushIntervalCommit":                   storage.DefaultFlushIntervalCommit,
		"storage.DefaultFlushIntervalCQ":                       storage.DefaultFlushIntervalCQ,
		"storage.DefaultFlushCQLeastPages":                     storage.DefaultFlushCQLeastPages,
		"storage.DefaultFlushCQThorough":                       storage.DefaultFlushCQThorough,
		"storage.DefaultSyncFlushTimeout":                      storage.DefaultSyncFlushTimeout,
		"storage.Options.ReadUnCommitted":                      storage.Options{}.ReadUnCommitted,
		"storage.DefaultMaxMessageBytes":                       storage.DefaultMaxMessageBytes,
		"storage.DefaultFileReservedTime":                      storage.DefaultFileReservedTime,
		"storage.DefaultDeleteWhen":                            storage.DefaultDeleteWhen,
		"storage.DefaultDiskMaxUsedSpaceRatio":                 storage.DefaultDiskMaxUsedSpaceRatio,
		"storage.DefaultDiskSpaceCleanForciblyRatio":           storage.DefaultDiskSpaceCleanForciblyRatio,
		"storage.DefaultDiskSpaceWarningLevelRatio":            storage.DefaultDiskSpaceWarningLevelRatio,
		"storage.DefaultCleanResourceInterval":                 storage.DefaultCleanResourceInterval,
		"storage.DefaultMaxHashSlotNum":                        storage.DefaultMaxHashSlotNum,
		"storage.DefaultMaxIndexNum":                           storage.DefaultMaxIndexNum,
		"storage.DefaultMaxTransferBytes":                      storage.DefaultMaxTransferBytes,
		"storage.DefaultDeleteFilesBatchMax":                   storage.DefaultDeleteFilesBatchMax,
		"storage.DefaultDelayLevels":                           storage.DefaultDelayLevels,
		"config.DefaultHATransferBatchBytes":                   config.DefaultHATransferBatchBytes,
		"config.DefaultHAHousekeepingInterval":                 config.DefaultHAHousekeepingInterval,
		"config.DefaultHASendHeartbeatInterval":                config.DefaultHASendHeartbeatInterval,
		"config.DefaultHASlaveFallBehindMax":                   config.DefaultHASlaveFallBehindMax,
		"config.DefaultHATransferWaitInterval":                 config.DefaultHATransferWaitInterval,
		"config.DefaultHAReconnectInterval":                    config.DefaultHAReconnectInterval,
		"replication.DefaultMaxConnections":                    replication.DefaultMaxConnections,
		"producer.DefaultGroup":                                producer.DefaultGroup,
		"producer.DefaultSendTimeout":                          producer.DefaultSendTimeout,
		"producer.DefaultRetries":                              producer.DefaultRetries,
		"producer.DefaultAsyncRetries":                         producer.DefaultAsyncRetries,
		"producer.DefaultMaxMessageSize":                       producer.DefaultMaxMessageSize,
		"producer.DefaultCompressOver":                         producer.DefaultCompressOver,
		"producer.DefaultCompressLevel":                        producer.DefaultCompressLevel,
		"producer.DefaultCreateTopicKey":                       producer.DefaultCreateTopicKey,
		"producer.DefaultTopicQueueNums":                       producer.DefaultTopicQueueNums,
		"producer.DefaultMaxAsyncInFlight":                     producer.DefaultMaxAsyncInFlight,
		"producer.DefaultRetryUnreachableUntilTimeout":         producer.DefaultRetryUnreachableUntilTimeout,
		"producer.DefaultCloseTimeout":                         producer.DefaultCloseTimeout,
		"client.DefaultPollNameServerInterval":                 client.DefaultPollNameServerInterval,
		"client.DefaultHeartbeatBrokerInterval":                client.DefaultHeartbeatBrokerInterval,
		"client.DefaultRouteTimeout":                           client.DefaultRouteTimeout,
		"client.DefaultInstanceName":                           client.DefaultInstanceName,
		"consumer.DefaultPullBatchSize":                        consumer.DefaultPullBatchSize,
		"consumer.DefaultConsumeBatchSize":                     consumer.DefaultConsumeBatchSize,
		"consumer.DefaultConsumeGoroutines":                    consumer.DefaultConsumeGoroutines,
		"consumer.DefaultPullThresholdForQueue":                consumer.DefaultPullThresholdForQueue,
		"consumer.DefaultPullThresholdSizeMiB":                 consumer.DefaultPullThresholdSizeMiB,
		"consumer.DefaultConsumeConcurrentlySpan":              consumer.DefaultConsumeConcurrentlySpan,
		"consumer.DefaultPullSuspend":                          consumer.DefaultPullSuspend,
		"consumer.DefaultPullTimeout":                          consumer.DefaultPullTimeout,
		"consumer.DefaultPullInterval":                         consumer.DefaultPullInterval,
		"consumer.DefaultPostSubscriptionWhenPull":             consumer.DefaultPostSubscriptionWhenPull,
		"consumer.DefaultPullTimeDelayWhenException":           consumer.DefaultPullTimeDelayWhenException,
		"consumer.DefaultReconnectPullDelay":                   consumer.DefaultReconnectPullDelay,
		"consumer.DefaultMaxReconnectPullDelay":                consumer.DefaultMaxReconnectPullDelay,
		"consumer.DefaultRebalanceInterval":                    consumer.DefaultRebalanceInterval,
		"consumer.DefaultPersistInterval":                      consumer.DefaultPersistInterval,
		"consumer.DefaultMaxReconsumeTimes":                    consumer.DefaultMaxReconsumeTimes,
		"consumer.DefaultConsumeTimeout":                       consumer.DefaultConsumeTimeout,
		"consumer.DefaultLockInterval":                         consumer.DefaultLockInterval,
		"consumer.DefaultLockExpiry":                           consumer.DefaultLockExpiry,
		"consumer.DefaultSuspendDelay":                         consumer.DefaultSuspendDelay,
		"consumer.DefaultUnlockDelay":                          consumer.DefaultUnlockDelay,
		"consumer.DefaultMaxTimeConsumeContinuously":           consumer.DefaultMaxTimeConsumeContinuously,
		"consumer.DefaultFromTimestampAgo":                     consumer.DefaultFromTimestampAgo,
		"consumer.DefaultCloseTimeout":                         consumer.DefaultCloseTimeout,
		"consumer.DefaultLitePullBatchSize":                    consumer.DefaultLitePullBatchSize,
		"consumer.DefaultLitePullSuspend":                      consumer.DefaultLitePullSuspend,
		"consumer.DefaultAwaitDuration":                        consumer.DefaultAwaitDuration,
		"consumer.DefaultSimpleRequestTimeout":                 consumer.DefaultSimpleRequestTimeout,
	}
}

// defaultsRow is one row of the Defaults table.
type defaultsRow struct {
	line                        int
	setting, rocketmq, mq, code string
	why                         string
}

// TestDifferencesDefaults keeps docs/rocketmq-differences.md true: every default its Defaults
// table states for mq is the code's, every default the code names there is in the table,
// and a default that differs from RocketMQ 4.9.8's has its reason. Changing a default, or
// adding one to the table without a reason or a binding here, fails.
func TestDifferencesDefaults(t *testing.T) {
	doc, err := os.ReadFile(differencesDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := defaultsTable(doc)
	if err != nil {
		t.Fatalf("%s: %v", differencesDoc, err)
	}
	code := codeDefaults(t)
	seen := map[string]bool{}
	for _, r := range rows {
		want, ok := code[r.code]
		if !ok {
			t.Errorf("%s:%d: %q names no default this test knows; bind it in codeDefaults", differencesDoc, r.line, r.code)
			continue
		}
		if seen[r.code] {
			t.Errorf("%s:%d: %s listed twice", differencesDoc, r.line, r.code)
		}
		seen[r.code] = true
		got, err := parseDefault(r.mq, want)
		if err != nil {
			t.Errorf("%s:%d: %s: mq value %q: %v", differencesDoc, r.line, r.code, r.mq, err)
			continue
		}
		if !sameDefault(got, want) {
			t.Errorf("%s:%d: %s is %v in the code, the document says %q", differencesDoc, r.line, r.code, want, r.mq)
			continue
		}
		theirs, err := parseDefault(r.rocketmq, want)
		if (err != nil || !sameDefault(theirs, want)) && r.why == "" {
			t.Errorf("%s:%d: %s: mq's %q differs from RocketMQ's %q without a reason", differencesDoc, r.line, r.setting, r.mq, r.rocketmq)
		}
	}
	var missing []string
	for name := range code {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		t.Errorf("%s is not in the Defaults table of %s", name, differencesDoc)
	}
}

// TestDifferencesDefaultsParsing pins the value forms the table may use and shows that the
// check catches a changed default and an unexplained difference.
func TestDifferencesDefaultsParsing(t *testing.T) {
	for _, c := range []struct {
		cell string
		like any
		want any
	}{
		{"500ms", time.Duration(0), 500 * time.Millisecond},
		{"15m", time.Duration(0), 15 * time.Minute},
		{"72h", time.Duration(0), 72 * time.Hour},
		{"16 MiB", 0, int64(16 << 20)},
		{"32 KiB", int64(0), int64(32 << 10)},
		{"1 GiB", 0, int64(1 << 30)},
		{"10,000", 0, int64(10000)},
		{"`TBW102`", "", "TBW102"},
		{"off", false, false},
		{"on", true, true},
		{"`1s 1m 2h`", []time.Duration(nil), []time.Duration{time.Second, time.Minute, 2 * time.Hour}},
	} {
		got, err := parseDefault(c.cell, c.like)
		if err != nil || !sameDefault(got, c.want) {
			t.Errorf("parseDefault(%q) = %v, %v; want %v", c.cell, got, err, c.want)
		}
	}
	for _, c := range []struct {
		cell string
		like any
	}{{"none", 0}, {"16 + 2 x cores", 0}, {"3 s", time.Duration(0)}, {"yes", false}} {
		if got, err := parseDefault(c.cell, c.like); err == nil {
			t.Errorf("parseDefault(%q) = %v, want an error", c.cell, got)
		}
	}
	doc := []byte("# T\n\n## Defaults\n\ntext\n\n| a | b | c | d | e |\n| --- | --- | --- | --- | --- |\n" +
		"| `x` | 1s | 2s | `k` | |\n| `y` | none | 5 | `n` | bounded |\n\n## Next\n| z | 1 | 1 | `q` | |\n")
	rows, err := defaultsTable(doc)
	if err != nil || len(rows) != 2 || rows[0].code != "k" || rows[0].why != "" || rows[1].why != "bounded" || rows[1].line != 10 {
		t.Fatalf("defaultsTable = %+v, %v", rows, err)
	}
	got, _ := parseDefault(rows[0].mq, time.Duration(0))
	if sameDefault(got, time.Second) {
		t.Error("a changed default (2s in the document, 1s in the code) compares equal")
	}
	theirs, _ := parseDefault(rows[0].rocketmq, time.Duration(0))
	if sameDefault(theirs, got) {
		t.Error("an unexplained difference (1s against 2s) compares equal")
	}
}

// defaultsTable returns the rows of the first table under the "## Defaults" heading.
func defaultsTable(doc []byte) ([]defaultsRow, error) {
	sc := bufio.NewScanner(bytes.NewReader(doc))
	var rows []defaultsRow
	in, table, line := false, 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(text, "## ") {
			if in {
				break
			}
			in = text == "## Defaults"
			continue
		}
		if !in || !strings.HasPrefix(text, "|") {
			if in && table > 0 {
				break // the table ended
			}
			continue
		}
		table++
		if table <= 2 {
			continue // the header and its separator
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		if len(cells) != 5 {
			return nil, fmt.Errorf("line %d: %d cells, want 5", line, len(cells))
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, defaultsRow{line: line, setting: cells[0], rocketmq: cells[1], mq: cells[2],
			code: strings.Trim(cells[3], "`"), why: cells[4]})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no table under a \"## Defaults\" heading")
	}
	return rows, sc.Err()
}

// parseDefault reads a table cell as a value of like's type.
func parseDefault(cell string, like any) (any, error) {
	cell = strings.TrimSpace(cell)
	switch like.(type) {
	case time.Duration:
		return time.ParseDuration(cell)
	case []time.Duration:
		var out []time.Duration
		for _, f := range strings.Fields(strings.Trim(cell, "`")) {
			d, err := time.ParseDuration(f)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		return out, nil
	case int, int32, int64:
		return parseCount(cell)
	case string:
		return strings.Trim(cell, "`"), nil
	case bool:
		switch cell {
		case "on":
			return true, nil
		case "off":
			return false, nil
		}
		return nil, fmt.Errorf("want on or off")
	}
	return nil, fmt.Errorf("no parser for %T", like)
}

// parseCount reads "10,000", "4096" or "32 KiB".
func parseCount(cell string) (int64, error) {
	num, unit, _ := strings.Cut(cell, " ")
	mult := int64(1)
	switch unit {
	case "":
	case "KiB":
		mult = 1 << 10
	case "MiB":
		mult = 1 << 20
	case "GiB":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("unit %q", unit)
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(num, ",", ""), 10, 64)
	return n * mult, err
}

// sameDefault compares a parsed cell with a code value, integers of any width as int64.
func sameDefault(a, b any) bool {
	norm := func(v any) any {
		switch x := v.(type) {
		case int:
			return int64(x)
		case int32:
			return int64(x)
		}
		return v
	}
	a, b = norm(a), norm(b)
	if x, ok := a.([]time.Duration); ok {
		y, ok := b.([]time.Duration)
		return ok && slices.Equal(x, y)
	}
	return a == b
}

// offUnlessSet is how the Defaults table writes a listener that is off by default.
func offUnlessSet(addr string) string {
	if addr == "" {
		return "off unless `GRPC.Listen` is set"
	}
	return addr
}
