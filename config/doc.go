// Package config declares a node's settings once: Options (which package mq re-exports as
// mq.Options) and its groups, as RocketMQ groups them — the broker's identity (Broker), the
// message store (Store), bounds (Limits), housekeeping (Periods), scheduled delivery (Timers),
// Transactions, replication (HA), Security (cluster secret, ACL, TLS), a Controller in this
// node, ControllerMode for its broker, and HTTP. Each group has its defaults (EnsureDefaults,
// the constants of the part that applies them, named after RocketMQ's settings) and its
// checks (Validate) in one place; the node applies both before it starts.
//
// The same declarations make command lines: BindFlags reads each field's tags (flag name,
// RocketMQ's setting, usage, environment fallback) once and registers a flag whose default
// is EnsureDefaults'. examples/mqnode's flags are these.
package config
