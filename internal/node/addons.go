package node

import "github.com/mqgo/mq/internal/addon"

// The optional parts' interfaces (internal/addon), aliased here and in package mq so that
// mq.Options converts to Options.
type (
	ControllerFactory = addon.ControllerFactory
	MetricsFactory    = addon.MetricsFactory
)
