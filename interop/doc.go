// Package interop holds tests that run mq against peers from outside the module: the official
// Apache RocketMQ Go client (github.com/apache/rocketmq-client-go/v2) against mq nodes, RocketMQ
// 5's official Node.js SDK (nodejs5/, run with node against the mqnode binary's gRPC endpoint;
// without node these tests skip unless $CI is set), the mqadmin binary against the official
// client's consumers, and the dashboard in headless
// Chromium (driven with chromedp). It is its own module so that the library's go.mod stays free
// of those clients and their dependencies.
package interop
