// Package grpcapi holds RocketMQ 5's gRPC API for mq: the Go code generated from
// proto/apache/rocketmq/v2 lives in apiv2 (scripts/protogen.sh writes it), and this package's
// test fails when that committed code no longer matches the protocol files.
package grpcapi
