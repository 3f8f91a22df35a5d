package proxy

import (
	"errors"
	"fmt"

	"github.com/mqgo/mq/internal/grpcapi/apiv2"
	"github.com/mqgo/mq/remoting"
)

func status(code apiv2.Code, msg string) *apiv2.Status {
	return &apiv2.Status{Code: code, Message: msg}
}

func statusf(code apiv2.Code, format string, args ...any) *apiv2.Status {
	return status(code, fmt.Sprintf(format, args...))
}

var statusOK = status(apiv2.Code_OK, apiv2.Code_OK.String())

// fromRemoting is the status of a broker or name server answer that was not SUCCESS, as
// RocketMQ's proxy turns a remoting response code into a gRPC one (ResponseBuilder
// .buildStatus): the broker's remark goes with it, so the person reading it sees the
// broker's reason.
func fromRemoting(code int32, remark string) *apiv2.Status {
	c := apiv2.Code_INTERNAL_SERVER_ERROR
	switch code {
	case remoting.Success:
		c = apiv2.Code_OK
	case remoting.TopicNotExist:
		c = apiv2.Code_TOPIC_NOT_FOUND
	case remoting.NoPermission:
		c = apiv2.Code_FORBIDDEN
	case remoting.MessageIllegal:
		c = apiv2.Code_MESSAGE_CORRUPTED
	case remoting.SystemBusy:
		c = apiv2.Code_TOO_MANY_REQUESTS
	case remoting.RequestCodeNotSupported:
		c = apiv2.Code_NOT_IMPLEMENTED
	case remoting.FlushDiskTimeout:
		c = apiv2.Code_MASTER_PERSISTENCE_TIMEOUT
	case remoting.FlushSlaveTimeout:
		c = apiv2.Code_SLAVE_PERSISTENCE_TIMEOUT
	case remoting.SlaveNotAvailable:
		c = apiv2.Code_HA_NOT_AVAILABLE
	case remoting.SubscriptionGroupNotExist:
		c = apiv2.Code_CONSUMER_GROUP_NOT_FOUND
	case remoting.ServiceNotAvailable:
		c = apiv2.Code_INTERNAL_SERVER_ERROR
	}
	if remark == "" {
		remark = fmt.Sprintf("the broker answered code %d", code)
	}
	return status(c, remark)
}

// fromError is the status of a request that got no answer: the broker is gone, the node is
// closing or the client's deadline passed.
func fromError(what string, err error) *apiv2.Status {
	var re *remoting.ResponseError
	if errors.As(err, &re) {
		return fromRemoting(re.Code, re.Remark)
	}
	if errors.Is(err, remoting.ErrTimeout) {
		return statusf(apiv2.Code_PROXY_TIMEOUT, "%s: %v", what, err)
	}
	return statusf(apiv2.Code_INTERNAL_SERVER_ERROR, "%s: %v", what, err)
}
