package controller

import "github.com/mqgo/mq/internal/addon"

// Factory is the addon.ControllerFactory that starts this package's controller; package
// github.com/mqgo/mq/controller hands it to applications.
type Factory struct{}

// StartController is New.
func (Factory) StartController(o addon.ControllerOptions) (addon.Controller, error) {
	c, err := New(o)
	if err != nil {
		return nil, err // a typed nil in the interface would look like a running controller
	}
	return c, nil
}

// Of is the Raft controller behind a node's addon.Controller, or nil when the node runs none
// or another implementation (tests read the replicated state through it).
func Of(c addon.Controller) *Controller {
	rc, _ := c.(*Controller)
	return rc
}
