package remoting

import "context"

// Channel is one connection as a request handler sees it: the TCP connection a request arrived
// on, or the in-process link from a local client. Handlers answer later through it (a parked
// long poll), and the broker uses it to send requests to the client (NOTIFY_CONSUMER_IDS_CHANGED,
// CHECK_TRANSACTION_STATE). All methods are safe for concurrent use and never block on I/O.
type Channel interface {
	// ID is unique among the channels of one process.
	ID() uint64
	// RemoteAddr is the peer's "ip:port" (for in-process clients, a made-up unique address).
	RemoteAddr() string
	// LocalAddr is the address the peer connected to.
	LocalAddr() string
	// WriteResponse sends a response; it returns at once and reports only that the channel is
	// closed.
	WriteResponse(resp *Command) error
	// InvokeSync sends a request to the peer and waits for its answer until ctx ends.
	InvokeSync(ctx context.Context, req *Command) (*Command, error)
	// InvokeAsync sends a request and calls cb once with the answer or an error (timeout from
	// ctx's deadline, or a closed channel). cb must not block.
	InvokeAsync(ctx context.Context, req *Command, cb func(*Command, error)) error
	// InvokeOneway sends a request with the one-way bit and expects nothing back.
	InvokeOneway(req *Command) error
	// Close closes the connection; pending requests on it fail with ErrConnClosed.
	Close() error
	// Closed reports whether the channel has been closed.
	Closed() bool
}

// Trusted reports whether no guard checks ch's requests: ch is a link a node opened to itself,
// in process, through a transport it marked with InProcTransport.Trust, or a channel a
// processor wrapped around a request the guard already let through, to run it again (see
// Readmitted).
func Trusted(ch Channel) bool {
	switch t := ch.(type) {
	case interface{ trusted() bool }:
		return t.trusted()
	case Readmitted:
		return t.Readmitted()
	}
	return false
}

// Readmitted is a channel a processor wraps around a request it admitted before and runs again
// later, such as a parked pull woken by a message: the guard let the request through once and
// does not check it again (RocketMQ re-runs it without its RPC hooks). The parked request may
// keep only what the processor needs, not the fields it was signed with.
type Readmitted interface {
	Channel
	Readmitted() bool
}

// ConnEventType is what happened to a channel.
type ConnEventType int

// Connection events delivered to ConnListeners.
const (
	ConnConnect ConnEventType = iota
	ConnClose
	ConnIdle
	ConnException
)

func (t ConnEventType) String() string {
	return [...]string{"CONNECT", "CLOSE", "IDLE", "EXCEPTION"}[t]
}

// ConnEvent is delivered to listeners registered on a Dispatcher.
type ConnEvent struct {
	Type    ConnEventType
	Channel Channel
	Err     error // the cause, for ConnException and for a ConnClose after an error
}

// ConnListener receives connection events, one at a time, on the dispatcher's event goroutine.
type ConnListener func(ev ConnEvent)

// FieldsChannel is a Channel that writes a response's Command.Fields straight into its frame,
// so a processor answering on it needs no map (the network connections are; an in-process
// channel, which hands the Command over, is not).
type FieldsChannel interface {
	Channel
	// TakesFields marks the implementation.
	TakesFields()
}
