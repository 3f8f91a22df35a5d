package main

import (
	"fmt"
	"testing"
)

// The example runs end to end: three nodes, 20 messages out and every one of them back, nothing
// else.
func TestRun(t *testing.T) {
	consumed, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if len(consumed) != 20 {
		t.Errorf("%d distinct bodies consumed, want 20: %v", len(consumed), consumed)
	}
	for i := range 20 {
		if body := fmt.Sprintf("message %d", i); !consumed[body] {
			t.Errorf("%q not consumed", body)
		}
	}
}
