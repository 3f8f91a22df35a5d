//go:build !simbug

package storage

// simBugAckBeforeFlush is off: see simbug_on.go.
const simBugAckBeforeFlush = false
