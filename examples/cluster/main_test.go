package main

import "testing"

// The example runs end to end: three nodes, 20 messages out and back.
func TestRun(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
