package remoting

import (
	"context"
	"time"
)

// Transport is how producers, consumers, brokers and replication send requests: over TCP
// (Client) or straight into a local node's Dispatcher (InProcTransport). Everything above it runs
// the same code either way.
type Transport interface {
	// InvokeSync sends req to addr and waits for the response until ctx ends.
	InvokeSync(ctx context.Context, addr string, req *Command) (*Command, error)
	// InvokeAsync sends req and calls cb once with the response or an error (ErrTimeout after
	// ctx's deadline, ErrConnClosed if the connection dies). cb must not block.
	InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error
	// InvokeOneway sends req with the one-way bit set; nothing comes back.
	InvokeOneway(ctx context.Context, addr string, req *Command) error
	// RegisterProcessor handles requests with the given code that a server sends to us over a
	// connection we opened (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...).
	RegisterProcessor(code int32, p Processor)
	// Close closes every connection and fails pending requests with ErrClosed.
	Close() error
}

// DeadlineInvoker is a Transport whose sync requests take a deadline apart from their context:
// a sender bounding each attempt by its own deadline (a producer's send timeout) passes it here
// instead of deriving a context per attempt, which costs allocations and a timer of its own.
// A wrapper that must see every request (signing) does not have it, and its users derive the
// context as before.
type DeadlineInvoker interface {
	// InvokeSyncUntil is InvokeSync bounded by the sooner of ctx's deadline and until: past
	// it, it fails with ErrTimeout.
	InvokeSyncUntil(ctx context.Context, addr string, req *Command, until time.Time) (*Command, error)
	// InvokeAsyncUntil is InvokeAsync bounded by the sooner of ctx's deadline and until: past
	// it, cb gets ErrTimeout.
	InvokeAsyncUntil(ctx context.Context, addr string, req *Command, until time.Time, cb func(*Command, error)) error
}

// FieldsTransport is a Transport that takes requests whose extension fields are in
// Command.Fields (NewRequestFields) rather than in ExtFields: it encodes them into the frame, or
// materializes the map for whatever reads it (RPC hooks, an in-process node). Client and
// InProcTransport are; a Transport that reads requests' ExtFields itself (a wrapper, a fake)
// is not, and its callers build the map as before.
type FieldsTransport interface {
	Transport
	// TakesFields marks the implementation.
	TakesFields()
}

// RPCHook sees every request a client sends and every response it receives, for ACL signing and
// tracing. Hooks run on the caller's goroutine (AfterResponse on the reader's) and must not block.
type RPCHook interface {
	BeforeRequest(addr string, req *Command)
	AfterResponse(addr string, req, resp *Command)
}
