package consumer

import (
	"context"
	"fmt"

	"github.com/mqgo/mq/internal/client"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// clientConsumer is what the shared client instance needs from a consumer.
type clientConsumer = client.Consumer

// instance is the part of the shared client instance (internal/client, one per client id) the
// consumer uses: transport, routes, broker addresses and heartbeats.
type instance interface {
	ClientID() string
	Transport() remoting.Transport
	RegisterConsumer(group string, c clientConsumer) error
	UnregisterConsumer(group string)
	TopicRoute(ctx context.Context, topic string) (*route.TopicRouteData, error)
	// CachedTopicRoute is the route TopicRoute would answer without I/O, or nil.
	CachedTopicRoute(topic string) *route.TopicRouteData
	BrokerAddr(brokerName string, brokerID int64) string
	MasterAddr(brokerName string) string
	AdminAddr(brokerName string) string
	AnyBrokerAddrOfTopic(topic string) string
	SendHeartbeatToAllBrokers(ctx context.Context)
	Release() error
}

// acquireInstance returns the shared instance for cfg's client id.
func acquireInstance(cfg *pullerConfig) (instance, error) {
	if cfg.inst != nil {
		return cfg.inst, nil
	}
	l := cfg.logger
	inst, err := client.Acquire(client.Options{NameServers: cfg.nameServers, InstanceName: cfg.instanceName,
		Transport: cfg.transport, OwnTransport: cfg.ownTransport, Namespace: cfg.namespace, Logger: &l,
		Credentials: cfg.credentials, TLSConfig: cfg.tlsConfig,
		PollNameServerInterval: cfg.pollRoutes, HeartbeatBrokerInterval: cfg.heartbeat})
	if err != nil {
		if cfg.ownTransport && cfg.transport != nil {
			cfg.transport.Close()
		}
		return nil, fmt.Errorf("%w: %w", ErrNoInstance, err)
	}
	return inst, nil
}

var _ instance = (*client.Instance)(nil)

// The puller is what registers with the instance: the instance's Consumer interface names the
// internal heartbeat body type, which the consumers' exported methods must not.
var _ clientConsumer = (*puller)(nil)
