package protocol

import (
	"testing"

	"github.com/mqgo/mq/remoting"
)

// BenchmarkHeaderCodec encodes and decodes the headers every message crosses: the send request
// and its answer, the pull request and its answer.
func BenchmarkHeaderCodec(b *testing.B) {
	send := goClientSend()
	cases := []struct {
		name    string
		in, out remoting.Header
	}{
		{"SendMessageRequestHeaderV2", (*SendMessageRequestHeaderV2)(&send), new(SendMessageRequestHeaderV2)},
		{"SendMessageResponseHeader", &SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000064",
			QueueID: 2, QueueOffset: 15, MsgRegion: "DefaultRegion"}, new(SendMessageResponseHeader)},
		{"PullMessageRequestHeader", &PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 2,
			QueueOffset: 15, MaxMsgNums: 32, SysFlag: BuildPullSysFlag(true, true, false, false), CommitOffset: 12,
			SuspendTimeoutMillis: 20000, ExpressionType: "TAG", BrokerName: "broker-a"}, new(PullMessageRequestHeader)},
		{"PullMessageResponseHeader", &PullMessageResponseHeader{NextBeginOffset: 16, MinOffset: 0, MaxOffset: 1 << 20},
			new(PullMessageResponseHeader)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.out.Decode(remoting.EncodeHeader(c.in)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
