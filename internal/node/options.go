package node

import (
	"errors"
	"fmt"

	"github.com/mqgo/mq/config"
)

// Options are the node's settings, declared once in package config (mq.Options is
// config.Options); the node adds its methods: the defaults and checks of the parts it starts
// (here), each part's settings (parts.go) and the optional parts' implementations
// (addons.go).
type Options struct{ config.Options }

// Defaults the node and its tests name.
const (
	DefaultListen           = config.DefaultListen
	DefaultStoreDir         = config.DefaultStoreDir
	DefaultACLWatchInterval = config.DefaultACLWatchInterval
)

// withDefaults fills every group's defaults (config's EnsureDefaults).
func (o Options) withDefaults() Options {
	o.Options.EnsureDefaults()
	return o
}

// validate reports every problem at once.
func (o Options) validate() error {
	errs := []error{o.Options.Validate()}
	for i, h := range o.HTTP.AllowedHosts {
		if err := checkHTTPHost(h); err != nil {
			errs = append(errs, fmt.Errorf("mq: HTTP.AllowedHosts[%d] %q: %w", i, h, err))
		}
	}
	if o.Controller.Impl.Impl() != nil {
		if _, err := o.controllerFactory(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.HTTP.Metrics.Impl() != nil {
		if _, err := o.metricsFactory(); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := o.aclFile(); err != nil {
		errs = append(errs, err)
	}
	if _, err := o.grpcFactory(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
