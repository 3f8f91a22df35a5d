//go:build !invariants && !race

package storage

const invariants = false
