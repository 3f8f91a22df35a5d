package interop

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/google/go-cmp/cmp"
	"github.com/mqgo/mq"
	"github.com/mqgo/mq/config"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
	"github.com/rs/zerolog"
)

func init() { rlog.SetLogLevel("error") }

func startNameServer(t *testing.T) *mq.Node {
	t.Helper()
	l := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	n, err := mq.StartNode(mq.Options{Listen: "127.0.0.1:0", DisableBroker: true, Logger: &l, Store: config.Store{Dir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func TestOfficialClientReadsRoutes(t *testing.T) {
	n := startNameServer(t)
	// The name service drops a broker when the connection it registered on closes, so the
	// registrations go through one client that stays open for the whole test.
	keep := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { keep.Close() })
	registerOn := func(cluster, name string, id int64, addr string, topics map[string]int32) {
		t.Helper()
		table := map[string]route.TopicConfig{}
		for topic, queues := range topics {
			table[topic] = route.TopicConfig{TopicName: topic, ReadQueueNums: queues, WriteQueueNums: queues,
				Perm: route.PermReadWrite}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := keep.InvokeSync(ctx, n.Addr(), route.BuildRegisterBroker(&route.RegisterBrokerRequest{
			ClusterName: cluster, BrokerName: name, BrokerAddr: addr, HAServerAddr: addr, BrokerID: id,
			Body: route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
				TopicConfigTable: table, DataVersion: route.DataVersion{Timestamp: 1, Counter: 1}}}}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := route.DecodeRegisterBrokerResult(resp); err != nil {
			t.Fatal(err)
		}
	}
	registerOn("c1", "broker-a", 0, "127.0.0.1:10911", map[string]int32{"T": 4, "OnlyA": 2})
	registerOn("c1", "broker-a", 1, "127.0.0.1:10921", map[string]int32{"T": 4, "OnlyA": 2})
	registerOn("c2", "broker-b", 0, "127.0.0.1:20911", map[string]int32{"T": 3})

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{n.Addr()})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	mqs, err := adm.FetchPublishMessageQueues(ctx, "T")
	if err != nil {
		t.Fatalf("FetchPublishMessageQueues: %v", err)
	}
	var got []string
	for _, q := range mqs {
		got = append(got, q.String())
	}
	var want []string
	for i := range 4 {
		want = append(want, (&primitive.MessageQueue{Topic: "T", BrokerName: "broker-a", QueueId: i}).String())
	}
	for i := range 3 {
		want = append(want, (&primitive.MessageQueue{Topic: "T", BrokerName: "broker-b", QueueId: i}).String())
	}
	sort.Strings(got)
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("publish queues of T (-want +got):\n%s", diff)
	}

	clusters, err := adm.FetchClusterList("T")
	if err != nil {
		t.Fatalf("FetchClusterList: %v", err)
	}
	sort.Strings(clusters)
	if diff := cmp.Diff([]string{"c1", "c2"}, clusters); diff != "" {
		t.Errorf("clusters of T (-want +got):\n%s", diff)
	}

	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatalf("FetchAllTopicList: %v", err)
	}
	sort.Strings(list.TopicList)
	if diff := cmp.Diff([]string{"OnlyA", "T"}, list.TopicList); diff != "" {
		t.Errorf("topic list (-want +got):\n%s", diff)
	}

	if _, err := adm.FetchPublishMessageQueues(ctx, "NoSuchTopic"); err == nil {
		t.Error("route of an unknown topic: no error")
	}

}
