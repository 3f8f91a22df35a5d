//go:build invariants || race

package storage

// invariants turns on costly internal consistency checks; they panic, as a broken invariant
// is a bug, not bad input. `go test -race` enables them.
const invariants = true
