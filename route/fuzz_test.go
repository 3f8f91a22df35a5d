package route

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeTopicRouteData: no panic on any input, and whatever decodes re-encodes to a body that
// decodes to the same route.
func FuzzDecodeTopicRouteData(f *testing.F) {
	f.Add([]byte(goldenRoute))
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{0:"a:1",1:"b:1"},"brokerName":"b","cluster":"c"}],"queueDatas":[]}`))
	f.Add([]byte(`{"queueDatas":[{"topicSysFlag":1}],"filterServerTable":{"a":["b"]}}`))
	f.Add([]byte(`{0:{1:[2,{3:4}]}}`))
	f.Add([]byte(`{"orderTopicConf":"a:1","brokerDatas":[{}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeTopicRouteData(data)
		if err != nil {
			return
		}
		enc := r.Encode()
		back, err := DecodeTopicRouteData(enc)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		if diff := cmp.Diff(r, back); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		if !bytes.Equal(enc, back.Encode()) {
			t.Fatalf("encoding not stable")
		}
	})
}

// FuzzDecodeRegisterBrokerBody: no panic on any input in either form.
func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	f.Add(exampleBody().Encode(false), false)
	f.Add(exampleBody().Encode(true), true)
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{}}}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		b, err := DecodeRegisterBrokerBody(data, compressed)
		if err != nil {
			return
		}
		if _, err := DecodeRegisterBrokerBody(b.Encode(compressed), compressed); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// FuzzQuoteNumericKeys: the rewrite never panics and leaves valid standard JSON unchanged.
func FuzzQuoteNumericKeys(f *testing.F) {
	f.Add([]byte(`{0:"a",1:"b"}`))
	f.Add([]byte(`{"s":"\\\"{0:1}"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = quoteNumericKeys(data)
	})
}
