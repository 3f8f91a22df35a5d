package route_test

import (
	"fmt"

	"github.com/mqgo/mq/route"
)

// A route encodes to the compact JSON the official Go client parses.
func ExampleTopicRouteData_Encode() {
	r := &route.TopicRouteData{
		QueueDatas: []route.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4,
			Perm: route.PermReadWrite}},
		BrokerDatas: []route.BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{route.MasterID: "10.0.0.5:10911"}}},
	}
	fmt.Println(string(r.Encode()))
	// Output:
	// {"orderTopicConf":null,"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSynFlag":0}],"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.5:10911"}}],"filterServerTable":{}}
}

// Apache RocketMQ name servers write broker ids as bare integers; the decoder accepts them.
func ExampleDecodeTopicRouteData() {
	body := `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],` +
		`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSynFlag":0,"writeQueueNums":4}]}`
	r, err := route.DecodeTopicRouteData([]byte(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	bd := r.BrokerDatas[0]
	fmt.Println(bd.BrokerName, bd.MasterAddr(), bd.BrokerAddrs[1], route.PermString(r.QueueDatas[0].Perm))
	// Output:
	// broker-a 10.0.0.5:10911 10.0.0.6:10911 RW-
}

// A broker builds its registration and sends it with any transport; the answer tells a slave
// where its master is.
func ExampleBuildRegisterBroker() {
	req := route.BuildRegisterBroker(&route.RegisterBrokerRequest{
		ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerAddr: "10.0.0.6:10911",
		HAServerAddr: "10.0.0.6:10912", BrokerID: 1,
		Body: route.RegisterBrokerBody{TopicConfigSerializeWrapper: route.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]route.TopicConfig{
				"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: route.PermReadWrite},
			},
			DataVersion: route.DataVersion{Timestamp: 1700000000000, Counter: 1},
		}},
	})
	// Then: resp, err := client.InvokeSync(ctx, nameServerAddr, req)
	// and res, err := route.DecodeRegisterBrokerResult(resp) for res.MasterAddr, res.HAServerAddr.

	fmt.Println(req.Code, req.ExtFields["brokerId"], req.ExtFields["compressed"])
	// Output:
	// 103 1 false
}
