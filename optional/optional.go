// Package optional carries a node's optional parts — RocketMQ 5's controller, the Prometheus
// metrics, the plain_acl.yml reader and RocketMQ 5's gRPC endpoint — to mq.Options without package mq importing them, so
// an application that does not turn a part on links none of its dependencies (Raft and its
// log store, the Prometheus client, a YAML parser, gRPC). Packages github.com/mqgo/mq/controller,
// github.com/mqgo/mq/metrics, github.com/mqgo/mq/aclfile and github.com/mqgo/mq/proxy hand
// out values of these types;
// the node runs what they hold.
package optional

// Controller is the value of mq.Options.Controller.Impl: controller.Raft() from package
// github.com/mqgo/mq/controller. The zero value holds none.
type Controller struct{ impl any }

// NewController wraps a controller implementation. Only the module's own packages have one;
// a node given anything else refuses to start, saying so.
func NewController(impl any) Controller { return Controller{impl: impl} }

// Impl is the implementation the value holds, nil for the zero value.
func (c Controller) Impl() any { return c.impl }

// Metrics is the value of mq.Options.HTTP.Metrics: metrics.Prometheus() from package
// github.com/mqgo/mq/metrics. The zero value holds none: /metrics is off.
type Metrics struct{ impl any }

// NewMetrics wraps a metrics implementation, as NewController does a controller.
func NewMetrics(impl any) Metrics { return Metrics{impl: impl} }

// Impl is the implementation the value holds, nil for the zero value.
func (m Metrics) Impl() any { return m.impl }

// ACLFile is the value of mq.Options.Security.ACLFile: aclfile.Watch(path) from package
// github.com/mqgo/mq/aclfile, which holds the YAML parser. The zero value holds none: ACL
// comes from Security.ACL, or is off.
type ACLFile struct{ impl any }

// NewACLFile wraps an ACL file reader, as NewController does a controller.
func NewACLFile(impl any) ACLFile { return ACLFile{impl: impl} }

// Impl is the implementation the value holds, nil for the zero value.
func (f ACLFile) Impl() any { return f.impl }

// GRPC is the value of mq.Options.GRPC.Service: proxy.Service() from package
// github.com/mqgo/mq/proxy, which holds RocketMQ 5's gRPC MessagingService and links
// google.golang.org/grpc. The zero value holds none.
type GRPC struct{ impl any }

// NewGRPC wraps a gRPC service implementation, as NewController does a controller.
func NewGRPC(impl any) GRPC { return GRPC{impl: impl} }

// Impl is the implementation the value holds, nil for the zero value.
func (g GRPC) Impl() any { return g.impl }
