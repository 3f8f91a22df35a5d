package admin

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq/internal/broker"
	"github.com/mqgo/mq/internal/broker/brokertest"
	"github.com/mqgo/mq/internal/broker/brokertest/wiretest"
	"github.com/mqgo/mq/internal/names"
	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// goAdminCreate is UPDATE_AND_CREATE_TOPIC with the Go admin's defaults (docs/protocol.md §6.1).
func goAdminCreate(topic string) *protocol.CreateTopicRequestHeader {
	return &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "defaultTopic", ReadQueueNums: 8,
		WriteQueueNums: 8, Perm: 6, TopicFilterType: route.FilterSingleTag}
}

func allTopicConfig(t *testing.T, tr remoting.Transport, addr string) route.TopicConfigSerializeWrapper {
	t.Helper()
	resp := brokertest.Invoke(t, tr, addr, remoting.NewRequest(remoting.GetAllTopicConfig, nil, nil))
	if resp.Code != remoting.Success {
		t.Fatalf("GET_ALL_TOPIC_CONFIG: %d %q", resp.Code, resp.Remark)
	}
	var w route.TopicConfigSerializeWrapper
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatalf("GET_ALL_TOPIC_CONFIG body %q: %v", resp.Body, err)
	}
	return w
}

// topicNames are the core's topics, sorted.
func topicNames(tb *env) []string {
	return slices.Sorted(maps.Keys(tb.Topics().All().TopicConfigTable))
}

func TestTopicAdmin(t *testing.T) {
	tb := start(t, nil, nil)
	for trName, tr := range tb.Transports() {
		t.Run(trName, func(t *testing.T) {
			topic := "Admin_" + trName
			h := goAdminCreate(topic)
			h.WriteQueueNums, h.Order = 4, true
			resp := brokertest.Invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.UpdateAndCreateTopic, remoting.EncodeHeader(h), nil))
			if resp.Code != remoting.Success {
				t.Fatalf("create: %d %q", resp.Code, resp.Remark)
			}
			want := broker.TopicConfig{TopicName: topic, ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6,
				TopicFilterType: route.FilterSingleTag, Order: true}
			before := allTopicConfig(t, tr, tb.Addr)
			if diff := cmp.Diff(want, before.TopicConfigTable[topic]); diff != "" {
				t.Errorf("GET_ALL_TOPIC_CONFIG entry (-want +got):\n%s", diff)
			}
			if _, ok := before.TopicConfigTable[names.TopicAutoCreate]; !ok || before.DataVersion.Counter == 0 {
				t.Errorf("GET_ALL_TOPIC_CONFIG lacks TBW102 or a data version: %+v", before.DataVersion)
			}

			// Store a message and an offset, then delete: config, offsets and queues go.
			sh := wiretest.SendHeader(topic, 3, nil)
			wiretest.WantSendOK(t, brokertest.Invoke(t, tr, tb.Addr, wiretest.SendRequest(remoting.SendMessage, &sh, []byte("x"), remoting.SerializeJSON)))
			wiretest.StoredRecord(t, tb.Store(), topic, 3, 0)
			tb.Offsets().Commit("g", topic, 3, 1)
			del := remoting.EncodeHeader(&protocol.DeleteTopicRequestHeader{Topic: topic})
			if resp := brokertest.Invoke(t, tr, tb.Addr, remoting.NewRequest(remoting.DeleteTopicInBroker, del, nil)); resp.Code != remoting.Success {
				t.Fatalf("delete: %d %q", resp.Code, resp.Remark)
			}
			after := allTopicConfig(t, tr, tb.Addr)
			if _, ok := after.TopicConfigTable[topic]; ok {
				t.Error("deleted topic still listed")
			}
			if after.DataVersion.Counter <= before.DataVersion.Counter {
				t.Errorf("data version %d did not advance past %d", after.DataVersion.Counter, before.DataVersion.Counter)
			}
			if off := tb.Offsets().Query("g", topic, 3); off != -1 {
				t.Errorf("offset %d kept for a deleted topic", off)
			}
			if n := tb.Store().MaxOffsetInQueue(topic, 3); n != 0 {
				t.Errorf("queue of a deleted topic has max offset %d", n)
			}
		})
	}
}

func TestTopicAdminRefused(t *testing.T) {
	tb := start(t, nil, nil)
	cases := []struct {
		name   string
		code   int32
		ext    map[string]string
		want   int32
		remark string
	}{
		{"create invalid name", remoting.UpdateAndCreateTopic, remoting.EncodeHeader(goAdminCreate("a b")),
			remoting.SystemError, "illegal characters"},
		{"create TBW102", remoting.UpdateAndCreateTopic, remoting.EncodeHeader(goAdminCreate(names.TopicAutoCreate)),
			remoting.NoPermission, "conflict with system topic"},
		{"create cluster name", remoting.UpdateAndCreateTopic, remoting.EncodeHeader(goAdminCreate("DefaultCluster")),
			remoting.SystemError, "conflict with system reserved words"},
		{"create bad filter", remoting.UpdateAndCreateTopic, func() map[string]string {
			h := goAdminCreate("T")
			h.TopicFilterType = "SQL92"
			return remoting.EncodeHeader(h)
		}(), remoting.SystemError, "topicFilterType"},
		{"create no perm", remoting.UpdateAndCreateTopic, map[string]string{"topic": "T", "readQueueNums": "1",
			"writeQueueNums": "1"}, remoting.SystemError, "<perm>"},
		{"delete schedule topic", remoting.DeleteTopicInBroker, map[string]string{"topic": names.TopicSchedule},
			remoting.NoPermission, "conflict with system topic"},
		{"delete blank", remoting.DeleteTopicInBroker, map[string]string{}, remoting.SystemError, "<topic>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := topicNames(tb)
			resp := brokertest.Invoke(t, tb.TCP, tb.Addr, remoting.NewRequest(c.code, c.ext, nil))
			if resp.Code != c.want || !strings.Contains(resp.Remark, c.remark) {
				t.Errorf("response %d %q, want %d containing %q", resp.Code, resp.Remark, c.want, c.remark)
			}
			if diff := cmp.Diff(before, topicNames(tb)); diff != "" {
				t.Errorf("topics changed by a refused request (-before +after):\n%s", diff)
			}
		})
	}
	if tc, _ := tb.Topics().Get(names.TopicAutoCreate); !route.IsInherited(tc.Perm) {
		t.Errorf("TBW102 changed: %+v", tc)
	}
}
