package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/mqgo/mq/internal/protocol"
	"github.com/mqgo/mq/remoting"
	"github.com/mqgo/mq/route"
)

// The name servers' KV configuration (PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG), which
// mqadmin updateKvConfig, deleteKvConfig and updateOrderConf change. Writes go to every name
// server, as RocketMQ's admin sends them: each name server keeps its own table.

// NamespaceOrderTopicConfig is the KV namespace of order topics' queue layouts
// (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG): key a topic, value "brokerName:queueNums;...".
const NamespaceOrderTopicConfig = route.NamespaceOrderTopicConfig

// ErrKVNotFound is GetKVConfig's error for an entry no name server has.
var ErrKVNotFound = errors.New("admin: no such kv config")

// PutKVConfig creates or updates an entry on every name server, in turn; the first refusal
// stops it.
func (a *Admin) PutKVConfig(ctx context.Context, namespace, key, value string) error {
	for _, ns := range a.opts.NameServers {
		req := remoting.NewRequest(remoting.PutKVConfig, remoting.EncodeHeader(
			&protocol.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}), nil)
		if _, err := a.invokeOK(ctx, ns, req); err != nil {
			return fmt.Errorf("admin: put kv config %s/%s on name server %s: %w", namespace, key, ns, err)
		}
	}
	return nil
}

// DeleteKVConfig deletes an entry from every name server, in turn; deleting an entry a name
// server lacks is no error.
func (a *Admin) DeleteKVConfig(ctx context.Context, namespace, key string) error {
	for _, ns := range a.opts.NameServers {
		req := remoting.NewRequest(remoting.DeleteKVConfig, remoting.EncodeHeader(
			&protocol.DeleteKVConfigRequestHeader{Namespace: namespace, Key: key}), nil)
		if _, err := a.invokeOK(ctx, ns, req); err != nil {
			return fmt.Errorf("admin: delete kv config %s/%s on name server %s: %w", namespace, key, ns, err)
		}
	}
	return nil
}

// GetKVConfig reads an entry from the first name server that answers; an entry it lacks is
// ErrKVNotFound.
func (a *Admin) GetKVConfig(ctx context.Context, namespace, key string) (string, error) {
	resp, err := a.invokeNameServer(ctx, func() *remoting.Command {
		return remoting.NewRequest(remoting.GetKVConfig, remoting.EncodeHeader(
			&protocol.GetKVConfigRequestHeader{Namespace: namespace, Key: key}), nil)
	})
	var re *remoting.ResponseError
	if errors.As(err, &re) && re.Code == remoting.QueryNotFound {
		return "", fmt.Errorf("%w: %s/%s", ErrKVNotFound, namespace, key)
	}
	if err != nil {
		return "", fmt.Errorf("admin: get kv config %s/%s: %w", namespace, key, err)
	}
	var h protocol.GetKVConfigResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return "", fmt.Errorf("admin: get kv config %s/%s: %w", namespace, key, err)
	}
	return h.Value, nil
}
