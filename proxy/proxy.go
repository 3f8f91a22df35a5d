// Package proxy turns on RocketMQ 5's gRPC MessagingService on a node, the API the 5.x SDKs
// (apache/rocketmq-clients: Java, Go, Node.js, Python, C#, Rust, C++) speak: import it, set
// mq.Options.GRPC.Service to Service() and GRPC.Listen to an address (RocketMQ's proxy uses
// 8081), and point the SDKs' endpoints at Node.GRPCAddr(). Like RocketMQ 5's proxy in local
// mode, the endpoint runs inside the node and turns each RPC into requests to the node's own
// broker. It lives in its own package so that an application that serves no gRPC does not link
// google.golang.org/grpc and its dependencies (docs/grpc.md).
//
//	n, err := mq.StartNode(mq.Options{GRPC: config.GRPC{Listen: ":8081", Service: proxy.Service()}})
package proxy

import (
	"github.com/mqgo/mq/internal/proxy"
	"github.com/mqgo/mq/optional"
)

// Service is the gRPC endpoint for mq.Options.GRPC.Service.
func Service() optional.GRPC { return optional.NewGRPC(proxy.Factory{}) }
