package broker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mqgo/mq/internal/message"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
)

// decodeRecords splits a body of back-to-back records.
func decodeRecords(t *testing.T, body []byte) []message.Record {
	t.Helper()
	var out []message.Record
	for len(body) > 0 {
		var r message.Record
		n, err := message.DecodeRecord(body, &r, true)
		if err != nil {
			t.Fatalf("record %d: %v", len(out), err)
		}
		out = append(out, r)
		body = body[n:]
	}
	return out
}

func TestQueryMessageByKeyAndViewByID(t *testing.T) {
	tb := startTestBroker(t, nil)
	a := sbPut(t, tb, "QT", 0, "first", map[string]string{message.PropertyKeys: "order-1 order-2",
		message.PropertyUniqKey: "UQ1"}, 0)
	sbPut(t, tb, "QT", 1, "second", map[string]string{message.PropertyKeys: "order-2"}, 0)
	sbPut(t, tb, "Other", 0, "third", map[string]string{message.PropertyKeys: "order-1"}, 0)
	eventually(t, "index", func() bool { return tb.Store().DispatchedPhyOffset() == tb.Store().MaxPhyOffset() })
	now := time.Now().UnixMilli()

	for name, tr := range tb.Transports() {
		t.Run(name, func(t *testing.T) {
			query := func(key string, unique bool) *remoting.Command {
				h := protocol.QueryMessageRequestHeader{Topic: "QT", Key: key, MaxNum: 10, BeginTimestamp: 0,
					EndTimestamp: now + 60_000, UniqueKeyQuery: unique}
				return invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.QueryMessage, remoting.EncodeHeader(&h), nil))
			}
			resp := query("order-1", false)
			if resp.Code != remoting.Success {
				t.Fatalf("query: %d %s", resp.Code, resp.Remark)
			}
			var rh protocol.QueryMessageResponseHeader
			if err := rh.Decode(resp.ExtFields); err != nil || rh.IndexLastUpdatePhyoffset <= 0 {
				t.Errorf("response header %+v %v", rh, err)
			}
			recs := decodeRecords(t, resp.Body)
			if len(recs) != 1 || string(recs[0].Body) != "first" {
				t.Fatalf("order-1: %d records", len(recs))
			}
			if recs := decodeRecords(t, query("order-2", false).Body); len(recs) != 2 {
				t.Errorf("order-2: %d records, want 2", len(recs))
			}
			if recs := decodeRecords(t, query("UQ1", true).Body); len(recs) != 1 || string(recs[0].Body) != "first" {
				t.Errorf("by unique key: %d records", len(recs))
			}
			resp = query("nope", false)
			if resp.Code != remoting.QueryNotFound || len(resp.Body) != 0 || resp.Ext("indexLastUpdatePhyoffset") == "" {
				t.Errorf("no match: %d %q %v", resp.Code, resp.Remark, resp.ExtFields)
			}

			// VIEW_MESSAGE_BY_ID takes the offset decoded from the message id.
			_, off, err := message.ParseOffsetMsgID(a.MsgID())
			if err != nil {
				t.Fatal(err)
			}
			view := func(off int64) *remoting.Command {
				h := protocol.ViewMessageRequestHeader{Offset: off}
				return invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.ViewMessageByID, remoting.EncodeHeader(&h), nil))
			}
			resp = view(off)
			want, _ := tb.Store().LookMessageByOffset(a.PhyOffset)
			if resp.Code != remoting.Success || !bytes.Equal(resp.Body, want) {
				t.Errorf("view: %d %q, body equal %v", resp.Code, resp.Remark, bytes.Equal(resp.Body, want))
			}
			resp = view(off + 5)
			if resp.Code != remoting.SystemError || !strings.HasPrefix(resp.Remark, "can not find message by the offset, ") {
				t.Errorf("view bad offset: %d %q", resp.Code, resp.Remark)
			}
		})
	}
}
