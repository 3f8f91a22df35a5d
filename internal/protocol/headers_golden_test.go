package protocol

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

// The golden file pins every header's wire behaviour — keys, value forms, omissions, decoded
// values and the first error with its field — so a change to how codecs are written cannot
// change what goes on the wire or what the broker answers. Rewrite it with -update only for a
// deliberate wire change.

var updateGolden = flag.Bool("update", false, "rewrite testdata/headers.golden")

const goldenPath = "testdata/headers.golden"

// goldenHeader is a header type under the name the golden file gives it: the RocketMQ name, so
// that two names sharing one codec each keep their entry.
type goldenHeader struct {
	name string
	make func() remoting.Header
}

func golden[T any, P interface {
	*T
	remoting.Header
}](name string) goldenHeader {
	return goldenHeader{name, func() remoting.Header { return P(new(T)) }}
}

// goldenHeaders lists every header of the package.
var goldenHeaders = []goldenHeader{
	golden[RegisterBrokerRequestHeader]("RegisterBrokerRequestHeader"),
	golden[RegisterBrokerResponseHeader]("RegisterBrokerResponseHeader"),
	golden[UnregisterBrokerRequestHeader]("UnregisterBrokerRequestHeader"),
	golden[QueryDataVersionRequestHeader]("QueryDataVersionRequestHeader"),
	golden[QueryDataVersionResponseHeader]("QueryDataVersionResponseHeader"),
	golden[GetRouteInfoRequestHeader]("GetRouteInfoRequestHeader"),
	golden[DeleteTopicFromNamesrvRequestHeader]("DeleteTopicFromNamesrvRequestHeader"),
	golden[RegisterTopicRequestHeader]("RegisterTopicRequestHeader"),
	golden[GetTopicsByClusterRequestHeader]("GetTopicsByClusterRequestHeader"),
	golden[PutKVConfigRequestHeader]("PutKVConfigRequestHeader"),
	golden[GetKVConfigRequestHeader]("GetKVConfigRequestHeader"),
	golden[GetKVConfigResponseHeader]("GetKVConfigResponseHeader"),
	golden[DeleteKVConfigRequestHeader]("DeleteKVConfigRequestHeader"),
	golden[GetKVListByNamespaceRequestHeader]("GetKVListByNamespaceRequestHeader"),
	golden[SendMessageRequestHeader]("SendMessageRequestHeader"),
	golden[SendMessageRequestHeaderV2]("SendMessageRequestHeaderV2"),
	golden[SendMessageResponseHeader]("SendMessageResponseHeader"),
	golden[PullMessageRequestHeader]("PullMessageRequestHeader"),
	golden[PullMessageResponseHeader]("PullMessageResponseHeader"),
	golden[ConsumerSendMsgBackRequestHeader]("ConsumerSendMsgBackRequestHeader"),
	golden[CreateTopicRequestHeader]("CreateTopicRequestHeader"),
	golden[DeleteTopicRequestHeader]("DeleteTopicRequestHeader"),
	golden[GetTopicStatsInfoRequestHeader]("GetTopicStatsInfoRequestHeader"),
	golden[GetConsumeStatsRequestHeader]("GetConsumeStatsRequestHeader"),
	golden[DeleteSubscriptionGroupRequestHeader]("DeleteSubscriptionGroupRequestHeader"),
	golden[UnregisterClientRequestHeader]("UnregisterClientRequestHeader"),
	golden[ConsumerGroupHeader]("ConsumerGroupHeader"),
	golden[QueryConsumerOffsetRequestHeader]("QueryConsumerOffsetRequestHeader"),
	golden[UpdateConsumerOffsetRequestHeader]("UpdateConsumerOffsetRequestHeader"),
	golden[QueueHeader]("QueueHeader"),
	golden[SearchOffsetRequestHeader]("SearchOffsetRequestHeader"),
	golden[ResetOffsetRequestHeader]("ResetOffsetRequestHeader"),
	golden[GetConsumerStatusRequestHeader]("GetConsumerStatusRequestHeader"),
	golden[GetConsumerRunningInfoRequestHeader]("GetConsumerRunningInfoRequestHeader"),
	golden[ConsumeMessageDirectlyRequestHeader]("ConsumeMessageDirectlyRequestHeader"),
	golden[OffsetResponseHeader]("OffsetResponseHeader"),
	golden[EarliestMsgStoreTimeResponseHeader]("EarliestMsgStoreTimeResponseHeader"),
	golden[QueryMessageRequestHeader]("QueryMessageRequestHeader"),
	golden[QueryMessageResponseHeader]("QueryMessageResponseHeader"),
	golden[ViewMessageRequestHeader]("ViewMessageRequestHeader"),
	golden[EndTransactionRequestHeader]("EndTransactionRequestHeader"),
	golden[ReplyMessageRequestHeader]("ReplyMessageRequestHeader"),
	golden[CheckTransactionStateRequestHeader]("CheckTransactionStateRequestHeader"),
	golden[BrokerHeartbeatRequestHeader]("BrokerHeartbeatRequestHeader"),
	golden[GetNextBrokerIdRequestHeader]("GetNextBrokerIdRequestHeader"),
	golden[ApplyBrokerIdResponseHeader]("ApplyBrokerIdResponseHeader"),
	golden[GetNextBrokerIdResponseHeader]("GetNextBrokerIdResponseHeader"),
	golden[ApplyBrokerIdRequestHeader]("ApplyBrokerIdRequestHeader"),
	golden[RegisterBrokerToControllerRequestHeader]("RegisterBrokerToControllerRequestHeader"),
	golden[RegisterBrokerToControllerResponseHeader]("RegisterBrokerToControllerResponseHeader"),
	golden[AlterSyncStateSetRequestHeader]("AlterSyncStateSetRequestHeader"),
	golden[AlterSyncStateSetResponseHeader]("AlterSyncStateSetResponseHeader"),
	golden[ElectMasterRequestHeader]("ElectMasterRequestHeader"),
	golden[ElectMasterResponseHeader]("ElectMasterResponseHeader"),
	golden[NotifyBrokerRoleChangedRequestHeader]("NotifyBrokerRoleChangedRequestHeader"),
	golden[GetReplicaInfoRequestHeader]("GetReplicaInfoRequestHeader"),
	golden[GetReplicaInfoResponseHeader]("GetReplicaInfoResponseHeader"),
	golden[RecallMessageRequestHeader]("RecallMessageRequestHeader"),
	golden[RecallMessageResponseHeader]("RecallMessageResponseHeader"),
	golden[GetMetaDataResponseHeader]("GetMetaDataResponseHeader"),
	golden[CleanControllerBrokerDataRequestHeader]("CleanControllerBrokerDataRequestHeader"),
	golden[PopMessageRequestHeader]("PopMessageRequestHeader"),
	golden[PopMessageResponseHeader]("PopMessageResponseHeader"),
	golden[AckMessageRequestHeader]("AckMessageRequestHeader"),
	golden[ChangeInvisibleTimeRequestHeader]("ChangeInvisibleTimeRequestHeader"),
	golden[ChangeInvisibleTimeResponseHeader]("ChangeInvisibleTimeResponseHeader"),
	golden[PeekMessageRequestHeader]("PeekMessageRequestHeader"),
	golden[NotificationRequestHeader]("NotificationRequestHeader"),
	golden[NotificationResponseHeader]("NotificationResponseHeader"),
	golden[PollingInfoRequestHeader]("PollingInfoRequestHeader"),
	golden[PollingInfoResponseHeader]("PollingInfoResponseHeader"),
	golden[WipeWritePermOfBrokerResponseHeader]("WipeWritePermOfBrokerResponseHeader"),
	golden[AddWritePermOfBrokerResponseHeader]("AddWritePermOfBrokerResponseHeader"),
	golden[GetBrokerConfigResponseHeader]("GetBrokerConfigResponseHeader"),
	golden[GetConsumeStatsInBrokerHeader]("GetConsumeStatsInBrokerHeader"),
	golden[CloneGroupOffsetRequestHeader]("CloneGroupOffsetRequestHeader"),
	golden[QueryConsumeQueueRequestHeader]("QueryConsumeQueueRequestHeader"),
	golden[ViewBrokerStatsDataRequestHeader]("ViewBrokerStatsDataRequestHeader"),
	golden[QueryTopicsByConsumerRequestHeader]("QueryTopicsByConsumerRequestHeader"),
	golden[CreateAccessConfigRequestHeader]("CreateAccessConfigRequestHeader"),
	golden[DeleteAccessConfigRequestHeader]("DeleteAccessConfigRequestHeader"),
	golden[UpdateGlobalWhiteAddrsConfigRequestHeader]("UpdateGlobalWhiteAddrsConfigRequestHeader"),
	golden[GetBrokerAclConfigResponseHeader]("GetBrokerAclConfigResponseHeader"),
}

func TestHeadersGolden(t *testing.T) {
	var out strings.Builder
	for _, g := range goldenHeaders {
		writeGolden(&out, g)
	}
	if *updateGolden {
		if err := os.WriteFile(goldenPath, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), out.String()); diff != "" {
		t.Errorf("header codecs differ from %s (-want +got):\n%s", goldenPath, diff)
	}
}

func writeGolden(w *strings.Builder, g goldenHeader) {
	fmt.Fprintf(w, "== %s\n", g.name)
	for _, v := range []string{"zero", "typical", "negative", "extreme"} {
		h := g.make()
		fillHeader(h, v)
		fmt.Fprintf(w, "encode %s: %s\n", v, formatExt(remoting.EncodeHeader(h)))
	}
	for _, c := range decodeCases(g) {
		h := g.make()
		fillHeader(h, "stale") // a decoder must set every field, whatever was there before
		err := h.Decode(c.ext)
		fmt.Fprintf(w, "decode %s: %+v err=%s\n", c.name, reflect.ValueOf(h).Elem().Interface(), formatErr(err))
	}
}

type decodeCase struct {
	name string
	ext  map[string]string
}

// decodeCases starts from the header's typical encoding and breaks one key at a time (absent,
// empty, not a number, out of int32 and int64 range, bool spellings), then all keys at once,
// then tries each key under its capitalized spelling (old clients' names).
func decodeCases(g goldenHeader) []decodeCase {
	h := g.make()
	fillHeader(h, "typical")
	base := remoting.EncodeHeader(h)
	keys := slices.Sorted(maps.Keys(base))
	cases := []decodeCase{{"nil", nil}, {"empty", map[string]string{}}, {"typical", base}}
	for _, k := range keys {
		cases = append(cases, decodeCase{"-" + k, without(base, k)})
		for _, v := range []string{"", "x", "2147483648", "-9223372036854775809", "True", "TRUE", "false", "1"} {
			cases = append(cases, decodeCase{fmt.Sprintf("%s=%q", k, v), with(base, k, v)})
		}
	}
	for _, v := range []string{"", "x"} {
		all := map[string]string{}
		for _, k := range keys {
			all[k] = v
		}
		cases = append(cases, decodeCase{fmt.Sprintf("all=%q", v), all})
	}
	for _, k := range keys {
		old := capitalize(k)
		if old == k {
			continue
		}
		cases = append(cases,
			decodeCase{"old " + old, with(without(base, k), old, "3")},
			decodeCase{"old empty " + old, with(without(base, k), old, "")},
			decodeCase{"old bad " + old, with(without(base, k), old, "x")},
			decodeCase{"old and new " + old, with(base, old, "4")})
	}
	return cases
}

func capitalize(s string) string {
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func without(m map[string]string, k string) map[string]string {
	c := maps.Clone(m)
	delete(c, k)
	return c
}

func with(m map[string]string, k, v string) map[string]string {
	c := maps.Clone(m)
	c[k] = v
	return c
}

// fillHeader sets every field of the struct h points to by the variant's rule; field i gets
// a value that depends on i so that two fields cannot be swapped unnoticed.
func fillHeader(h remoting.Header, variant string) {
	s := reflect.ValueOf(h).Elem()
	for i := range s.NumField() {
		f := s.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(goldenString(variant, s.Type().Field(i).Name))
		case reflect.Int32:
			f.SetInt(goldenInt(variant, i, math.MinInt32, math.MaxInt32))
		case reflect.Int64:
			f.SetInt(goldenInt(variant, i, math.MinInt64, math.MaxInt64))
		case reflect.Bool:
			f.SetBool(variant == "typical" || variant == "extreme" || variant == "stale")
		default:
			panic("header field of kind " + f.Kind().String())
		}
	}
}

func goldenString(variant, field string) string {
	switch variant {
	case "typical":
		return "v-" + field
	case "extreme":
		return "a b,c=d\x01\x02é\"" + field
	case "stale":
		return "stale"
	}
	return ""
}

func goldenInt(variant string, i int, minV, maxV int64) int64 {
	switch variant {
	case "typical":
		return int64(7 + i)
	case "negative":
		return int64(-1 - i)
	case "extreme":
		if i%2 == 0 {
			return maxV
		}
		return minV
	case "stale":
		return 99
	}
	return 0
}

func formatExt(ext map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(ext)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%q", k, ext[k])
	}
	return b.String()
}

func formatErr(err error) string {
	if he, ok := err.(*remoting.HeaderError); ok {
		return fmt.Sprintf("HeaderError{Field:%q Value:%q Reason:%q}", he.Field, he.Value, he.Reason)
	}
	return fmt.Sprint(err)
}
