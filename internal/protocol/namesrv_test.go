package protocol

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/remoting"
)

func TestNamesrvHeadersRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		in   remoting.Header
		out  remoting.Header
	}{
		{"register", &RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "10.0.0.5:10911",
			ClusterName: "DefaultCluster", HAServerAddr: "10.0.0.5:10912", BrokerID: 1, Compressed: true,
			BodyCrc32: 12345}, &RegisterBrokerRequestHeader{}},
		{"register response", &RegisterBrokerResponseHeader{HAServerAddr: "h:1", MasterAddr: "m:1"},
			&RegisterBrokerResponseHeader{}},
		{"register response empty", &RegisterBrokerResponseHeader{}, &RegisterBrokerResponseHeader{}},
		{"unregister", &UnregisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "a:1", ClusterName: "c"},
			&UnregisterBrokerRequestHeader{}},
		{"query data version", &QueryDataVersionRequestHeader{BrokerName: "b", BrokerAddr: "a:1",
			ClusterName: "c", BrokerID: 2}, &QueryDataVersionRequestHeader{}},
		{"query data version response", &QueryDataVersionResponseHeader{Changed: true},
			&QueryDataVersionResponseHeader{}},
		{"route", &GetRouteInfoRequestHeader{Topic: "%RETRY%g"}, &GetRouteInfoRequestHeader{}},
		{"delete topic", &DeleteTopicFromNamesrvRequestHeader{Topic: "T"}, &DeleteTopicFromNamesrvRequestHeader{}},
		{"register topic", &RegisterTopicRequestHeader{Topic: "T"}, &RegisterTopicRequestHeader{}},
		{"topics by cluster", &GetTopicsByClusterRequestHeader{Cluster: "c"}, &GetTopicsByClusterRequestHeader{}},
		{"put kv", &PutKVConfigRequestHeader{Namespace: "ns", Key: "k", Value: "v"}, &PutKVConfigRequestHeader{}},
		{"get kv", &GetKVConfigRequestHeader{Namespace: "ns", Key: "k"}, &GetKVConfigRequestHeader{}},
		{"get kv response", &GetKVConfigResponseHeader{Value: "v"}, &GetKVConfigResponseHeader{}},
		{"delete kv", &DeleteKVConfigRequestHeader{Namespace: "ns", Key: "k"}, &DeleteKVConfigRequestHeader{}},
		{"kv list", &GetKVListByNamespaceRequestHeader{Namespace: "ns"}, &GetKVListByNamespaceRequestHeader{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ext := remoting.EncodeHeader(c.in)
			for k, v := range ext {
				if v == "" {
					t.Errorf("field %s encoded empty", k)
				}
			}
			if err := c.out.Decode(ext); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(c.in, c.out); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRegisterBrokerHeaderWire(t *testing.T) {
	h := &RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "10.0.0.5:10911",
		ClusterName: "DefaultCluster", HAServerAddr: "10.0.0.5:10912", BodyCrc32: 2147483647}
	want := map[string]string{"brokerName": "broker-a", "brokerAddr": "10.0.0.5:10911",
		"clusterName": "DefaultCluster", "haServerAddr": "10.0.0.5:10912", "brokerId": "0",
		"compressed": "false", "bodyCrc32": "2147483647"}
	if diff := cmp.Diff(want, remoting.EncodeHeader(h)); diff != "" {
		t.Errorf("extFields (-want +got):\n%s", diff)
	}
}

func TestNamesrvHeadersMissingField(t *testing.T) {
	cases := []struct {
		name  string
		h     remoting.Header
		ext   map[string]string
		field string
	}{
		{"register no addr", &RegisterBrokerRequestHeader{},
			map[string]string{"brokerName": "b", "clusterName": "c", "brokerId": "0"}, "brokerAddr"},
		{"register bad id", &RegisterBrokerRequestHeader{},
			map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "brokerId": "x"},
			"brokerId"},
		{"register bad crc", &RegisterBrokerRequestHeader{},
			map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "brokerId": "0",
				"bodyCrc32": "99999999999"}, "bodyCrc32"},
		{"unregister no id", &UnregisterBrokerRequestHeader{},
			map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c"}, "brokerId"},
		{"route nil ext", &GetRouteInfoRequestHeader{}, nil, "topic"},
		{"route empty topic", &GetRouteInfoRequestHeader{}, map[string]string{"topic": ""}, "topic"},
		{"put kv no value", &PutKVConfigRequestHeader{},
			map[string]string{"namespace": "n", "key": "k"}, "value"},
		{"topics by cluster", &GetTopicsByClusterRequestHeader{}, map[string]string{}, "cluster"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.h.Decode(c.ext)
			var he *remoting.HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("Decode = %v, want *remoting.HeaderError", err)
			}
			if he.Field != c.field {
				t.Errorf("field = %q, want %q (%v)", he.Field, c.field, err)
			}
		})
	}
}
