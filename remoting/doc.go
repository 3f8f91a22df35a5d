// Package remoting is RocketMQ 4.x's wire: the frame and its two header encodings (Command,
// AppendFrame, DecodeFrame), the request-code table shared by every transport (Dispatcher,
// Executor), the gnet Server, the TCP Client and the in-process transport.
//
// A frame (docs/protocol.md §1), big-endian:
//
//	+----------+-----------+-----------------+----------------+------------+
//	| length 4 | type 1    | header length 3 | header         | body       |
//	+----------+-----------+-----------------+----------------+------------+
//	  length counts every byte after itself; type 0 is a JSON header, 1 the compact ROCKETMQ one.
//
// What a peer can make a Server hold is bounded by ServerOptions: a frame by MaxFrameBytes,
// a header by MaxHeaderBytes and MaxExtFields (checked before the header is decoded), a
// connection's unsent responses by MaxPendingWriteBytes (beyond it responses wait uncopied and
// the connection's requests stay unread; see outbox), and connections by MaxConnections. A Client
// applies the same header limits and runs at most MaxServerRequests server-initiated requests at
// once. Connection close and exception events always reach the listeners; connect and idle
// events may be dropped under overload.
//
// Goroutines: a Server's gnet loops split and decode frames and never wait for a handler;
// executors run handlers; one goroutine per Dispatcher delivers connection events; one per
// Server wakes connections stalled on unsent responses. A Client has a reader per connection and
// a goroutine per running server-initiated request. Locks are never held across calls into gnet.
package remoting
