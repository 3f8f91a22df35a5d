// Package optional carries a node's optional parts — RocketMQ 5's controller and the
// Prometheus metrics — to mq.Options without package mq importing them, so an application
// that does not turn a part on links none of its dependencies (Raft and its log store,
// the Prometheus client). Packages github.com/mqgo/mq/controller and github.com/mqgo/mq/metrics
// hand out values of these types; the node runs what they hold.
package optional

// Controller is the value of mq.Options.Controller: controller.Raft() from package
// github.com/mqgo/mq/controller. The zero value holds none.
type Controller struct{ impl any }

// NewController wraps a controller implementation. Only the module's own packages have one;
// a node given anything else refuses to start, saying so.
func NewController(impl any) Controller { return Controller{impl: impl} }

// Impl is the implementation the value holds, nil for the zero value.
func (c Controller) Impl() any { return c.impl }

// Metrics is the value of mq.Options.Metrics: metrics.Prometheus() from package
// github.com/mqgo/mq/metrics. The zero value holds none: /metrics is off.
type Metrics struct{ impl any }

// NewMetrics wraps a metrics implementation, as NewController does a controller.
func NewMetrics(impl any) Metrics { return Metrics{impl: impl} }

// Impl is the implementation the value holds, nil for the zero value.
func (m Metrics) Impl() any { return m.impl }
