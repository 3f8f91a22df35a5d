// Package metrics turns on a node's Prometheus metrics: import it and set mq.Options.HTTP.Metrics
// to Prometheus(); Node.Handler then serves /metrics in the Prometheus exposition format from
// the node's own registry (never the process-global one), named after RocketMQ 5's broker
// metrics and, for the alerting signals RocketMQ 4.x operators read from it, after
// rocketmq-exporter's (docs/metrics.md lists every series). It lives in its own package so that
// an application that serves no metrics does not link the Prometheus client and its
// dependencies.
//
//	n, err := mq.StartNode(mq.Options{HTTP: config.HTTP{Metrics: metrics.Prometheus()}})
//	...
//	http.Handle("/", n.Handler())
package metrics

import (
	"github.com/mqgo/mq/internal/metrics"
	"github.com/mqgo/mq/optional"
)

// Prometheus is the metrics implementation for mq.Options.HTTP.Metrics.
func Prometheus() optional.Metrics { return optional.NewMetrics(metrics.Factory{}) }
