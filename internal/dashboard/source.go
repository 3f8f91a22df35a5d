package dashboard

import (
	"context"
	"time"

	"github.com/mqgo/mq/admin"
	"github.com/mqgo/mq/consumer"
	"github.com/mqgo/mq/route"
)

// source is the part of *admin.Admin the dashboard reads; tests substitute failures through it.
type source interface {
	ClusterInfo(ctx context.Context) (*route.ClusterInfo, error)
	BrokerRuntimeInfo(ctx context.Context, brokerAddr string) (map[string]string, error)
	TopicList(ctx context.Context) ([]string, error)
	TopicRoute(ctx context.Context, topic string) (*route.TopicRouteData, error)
	TopicStats(ctx context.Context, topic string) (map[admin.MessageQueue]admin.TopicOffset, error)
	ConsumerGroups(ctx context.Context) ([]string, error)
	ConsumeStats(ctx context.Context, group, topic string) (*admin.ConsumeStats, error)
	ConsumerConnection(ctx context.Context, group string) (*admin.ConsumerConnection, error)
	ResetOffsetByTime(ctx context.Context, group, topic string, t time.Time, force bool) (map[admin.MessageQueue]int64, error)
	QueryMessageByID(ctx context.Context, msgID string) (*consumer.Message, error)
	QueryMessageByUniqueKey(ctx context.Context, topic, uniqKey string) (*consumer.Message, error)
	QueryMessageByKey(ctx context.Context, topic, key string, max int, begin, end time.Time) ([]*consumer.Message, error)
	NameServers() []string
	SyncStateData(ctx context.Context, addr string, brokerNames []string) (*admin.BrokerReplicasInfo, error)
	ProducerConnection(ctx context.Context, group, topic string) ([]admin.Connection, error)
	SearchOffset(ctx context.Context, mq admin.MessageQueue, t time.Time) (int64, error)
	PullMessages(ctx context.Context, mq admin.MessageQueue, offset int64, maxNums int) ([]*consumer.Message, int64, error)
	ConsumeMessageDirectly(ctx context.Context, group, clientID, msgID string) (*admin.ConsumeDirectlyResult, error)
}

var _ source = (*admin.Admin)(nil)
