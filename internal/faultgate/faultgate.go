// Package faultgate is the seam between remoting's transports and the fault injector the
// module's tests partition clusters with (internal/faults, driven by mqtest). It keeps the
// injector out of remoting's public API: remoting registers, from its init, how a transport
// takes a Gate, and only code inside this module can reach Join.
//
// A transport that never joined holds a nil Gate and pays one nil check per request.
package faultgate

// Gate is what a joined transport consults about its traffic. It must be safe for concurrent
// use: every request and every arriving frame of the transport asks it.
type Gate interface {
	// Send is the fate of a request about to go to addr: a non-nil err fails it at once (a
	// cut link); lose drops it unsent, so its caller waits out its own deadline (a paused
	// end); neither sends it.
	Send(addr string) (lose bool, err error)
	// Drop reports whether frames arriving over the transport's connection to addr (answers,
	// and requests the far end sends back) are to be dropped unread.
	Drop(addr string) bool
}

// join is remoting's way of installing a Gate in one of its transports.
var join func(tr any, g Gate) bool

// Register installs remoting's join. Only remoting calls it, from its init, so it is set
// before any caller of Join can hold a transport.
func Register(fn func(tr any, g Gate) bool) { join = fn }

// Join makes tr consult g from its next request on: a *remoting.Client, or a
// *remoting.InProcTransport together with its TCP fallback when that is a *remoting.Client.
// It reports false, installing nothing, for any other transport. Call it before tr's first
// request: the field it sets is not guarded.
func Join(tr any, g Gate) bool { return join != nil && join(tr, g) }
