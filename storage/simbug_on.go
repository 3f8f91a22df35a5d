//go:build simbug

package storage

// simBugAckBeforeFlush is a bug put in on purpose, with the simbug build tag only: a SYNC_FLUSH
// append is acknowledged before the fsync that makes it durable. The simulation
// (internal/sim, `make sim-bug`) must catch it: a power cut then loses acknowledged messages.
const simBugAckBeforeFlush = true
