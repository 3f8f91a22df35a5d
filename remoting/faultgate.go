package remoting

import "github.com/mqgo/mq/internal/faultgate"

// The module's tests break links between in-process nodes on purpose (internal/faults, used by
// mqtest). A transport takes part only when such a test joins it through faultgate.Join; this
// is the one place that sets the field, so the public API offers no hook for it.
func init() { faultgate.Register(joinFaults) }

func joinFaults(tr any, g faultgate.Gate) bool {
	switch t := tr.(type) {
	case *Client:
		t.faults = g
	case *InProcTransport:
		t.faults = g
		if c, ok := t.fallback.(*Client); ok {
			c.faults = g
		}
	default:
		return false
	}
	return true
}

// lost is the send of a request a Gate drops: it never arrives, so the caller's wait ends at
// its deadline with ErrTimeout, as with a stopped process.
func lost(cmd *Command) error {
	cmd.written()
	return nil
}
