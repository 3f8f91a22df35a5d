package mq_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// Row 11: the operators' codes of issue 31 bound what the wire asks of them: a ConsumeQueue
// query's count and bounds, a configuration body's size and key count, a permission outside
// 0/2/4/6, a broker name of any length. Each gets an answer saying what was wrong, and the honest
// clients go on (the row's shared checks).
func hsAttackOpsCodes(t *testing.T, e *hsEnv) func() {
	c := hsClient(t)
	call := func(code int32, h remoting.Header, body []byte) *remoting.Command {
		var ext map[string]string
		if h != nil {
			ext = remoting.EncodeHeader(h)
		}
		return hsInvoke(t, c, e.main.addr, remoting.NewRequest(code, ext, body))
	}
	want := func(what string, resp *remoting.Command, code int32, remark string) {
		t.Helper()
		if resp.Code != code || !strings.Contains(resp.Remark, remark) || len(resp.Remark) > 2048 {
			t.Errorf("%s: answered %s %.200q, want %s with %q in a short remark", what,
				remoting.ResponseCodeName(resp.Code), resp.Remark, remoting.ResponseCodeName(code), remark)
		}
	}

	resp := call(remoting.QueryConsumeQueue, &protocol.QueryConsumeQueueRequestHeader{Topic: hsHonestTopic,
		QueueID: 0, Index: 0, Count: math.MaxInt32}, nil)
	if resp.Code != remoting.Success || len(resp.Body) > 1000*200 {
		t.Errorf("QUERY_CONSUME_QUEUE count MaxInt32: %s, %d bytes", remoting.ResponseCodeName(resp.Code), len(resp.Body))
	}
	want("QUERY_CONSUME_QUEUE queueId MaxInt32", call(remoting.QueryConsumeQueue, &protocol.QueryConsumeQueueRequestHeader{
		Topic: hsHonestTopic, QueueID: math.MaxInt32, Count: 1}, nil), remoting.SystemError, "is not exist")
	resp = call(remoting.QueryConsumeQueue, &protocol.QueryConsumeQueueRequestHeader{Topic: hsHonestTopic, Index: math.MinInt64, Count: 5}, nil)
	want("QUERY_CONSUME_QUEUE index MinInt64", resp, remoting.Success, "is not exist")

	want("UPDATE_BROKER_CONFIG 64 KiB + 1", call(remoting.UpdateBrokerConfig, nil, make([]byte, 64<<10+1)),
		remoting.SystemError, "at most")
	var many strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&many, "k%d=v\n", i)
	}
	want("UPDATE_BROKER_CONFIG 3000 keys", call(remoting.UpdateBrokerConfig, nil, []byte(many.String())),
		remoting.SystemError, "more than 1024 keys")
	want("UPDATE_BROKER_CONFIG brokerPermission=7", call(remoting.UpdateBrokerConfig, nil, []byte("brokerPermission=7")),
		remoting.SystemError, "brokerPermission")
	want("UPDATE_BROKER_CONFIG storePathRootDir", call(remoting.UpdateBrokerConfig, nil, []byte("storePathRootDir=/tmp/x\nbrokerPermission=6")),
		remoting.NoPermission, "storePathRootDir")
	want("UPDATE_NAMESRV_CONFIG kvConfigPath", call(remoting.UpdateNamesrvConfig, nil, []byte("kvConfigPath=/etc/passwd")),
		remoting.NoPermission, "kvConfigPath")
	resp = call(remoting.WipeWritePermOfBroker, &protocol.WipeWritePermOfBrokerRequestHeader{BrokerName: strings.Repeat("b", 10_000)}, nil)
	if resp.Code == remoting.Success || len(resp.Remark) > 2048 {
		t.Errorf("WIPE_WRITE_PERM_OF_BROKER with a 10 KB name: %s %.200q", remoting.ResponseCodeName(resp.Code), resp.Remark)
	}
	for _, code := range []int32{remoting.GetBrokerConfig, remoting.GetNamesrvConfig, remoting.GetSystemTopicListFromNS} {
		if resp := call(code, nil, nil); resp.Code != remoting.Success || len(resp.Body) == 0 {
			t.Errorf("code %d: %s %q", code, remoting.ResponseCodeName(resp.Code), resp.Remark)
		}
	}
	want("GET_BROKER_CONSUME_STATS", call(remoting.GetBrokerConsumeStats, &protocol.GetConsumeStatsInBrokerHeader{}, nil),
		remoting.Success, "")
	return nil
}
