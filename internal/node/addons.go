package node

import (
	"fmt"

	"github.com/mqgo/mq/internal/addon"
)

// The optional parts reach the node as optional.Controller and optional.Metrics (so that
// mq.Options names no internal type); these take out the implementations they hold.

func (o Options) controllerFactory() (addon.ControllerFactory, error) {
	f, ok := o.Controller.Impl.Impl().(addon.ControllerFactory)
	if !ok {
		return nil, fmt.Errorf("mq: Options.Controller.Impl holds %T, not a controller: set it to controller.Raft() from package github.com/mqgo/mq/controller", o.Controller.Impl.Impl())
	}
	return f, nil
}

// aclFile is the ACL file reader of Options.Security.ACLFile, nil when it holds none.
func (o Options) aclFile() (addon.ACLFile, error) {
	if o.Security.ACLFile.Impl() == nil {
		return nil, nil
	}
	f, ok := o.Security.ACLFile.Impl().(addon.ACLFile)
	if !ok {
		return nil, fmt.Errorf("mq: Options.Security.ACLFile holds %T, not an ACL file: set it to aclfile.Watch(path) from package github.com/mqgo/mq/aclfile", o.Security.ACLFile.Impl())
	}
	return f, nil
}

func (o Options) metricsFactory() (addon.MetricsFactory, error) {
	f, ok := o.HTTP.Metrics.Impl().(addon.MetricsFactory)
	if !ok {
		return nil, fmt.Errorf("mq: Options.HTTP.Metrics holds %T, not metrics: set it to metrics.Prometheus() from package github.com/mqgo/mq/metrics", o.HTTP.Metrics.Impl())
	}
	return f, nil
}

// grpcFactory is the gRPC endpoint of Options.GRPC.Service, nil when it holds none.
func (o Options) grpcFactory() (addon.GRPCFactory, error) {
	if o.GRPC.Service.Impl() == nil {
		if o.GRPC.Listen != "" {
			return nil, fmt.Errorf("mq: Options.GRPC.Listen %q needs Options.GRPC.Service: set it to proxy.Service() from package github.com/mqgo/mq/proxy", o.GRPC.Listen)
		}
		return nil, nil
	}
	f, ok := o.GRPC.Service.Impl().(addon.GRPCFactory)
	if !ok {
		return nil, fmt.Errorf("mq: Options.GRPC.Service holds %T, not a gRPC service: set it to proxy.Service() from package github.com/mqgo/mq/proxy", o.GRPC.Service.Impl())
	}
	return f, nil
}
