// Package interop holds tests that run the official Apache RocketMQ Go client
// (github.com/apache/rocketmq-client-go/v2) against mq nodes. It is its own module so that the
// library's go.mod stays free of the client and its dependencies.
package interop
