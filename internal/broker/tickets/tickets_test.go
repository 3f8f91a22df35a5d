package tickets

import (
	"testing"
	"time"
)

func TestChangesBeforeTheFirstRoundDoNotWait(t *testing.T) {
	r := New()
	if _, wait := r.Ask(); wait {
		t.Fatal("a change before any round began must not wait: the first round carries it")
	}
}

func TestRoundCoversTheTicketsIssuedBeforeItBegan(t *testing.T) {
	r := New()
	r.Start()
	a, wait := r.Ask()
	if !wait {
		t.Fatal("after Start a change waits for its round")
	}
	upTo := r.Begin()
	late, _ := r.Ask() // issued while the round is in flight: rides on the next one
	done := make(chan bool, 2)
	go func() { done <- r.Wait(a, time.Minute) }()
	r.Finish(upTo)
	if !<-done {
		t.Fatal("the round that began after the ticket must cover it")
	}
	if r.Wait(late, time.Millisecond) {
		t.Fatal("a ticket issued after the round began must wait for the next round")
	}
	r.Finish(r.Begin())
	if !r.Wait(late, time.Minute) {
		t.Fatal("the next round must cover the late ticket")
	}
	if got := r.Asked(); got != 2 {
		t.Fatalf("Asked = %d, want 2", got)
	}
}

func TestStopReleasesWaitersUncovered(t *testing.T) {
	r := New()
	r.Start()
	ticket, _ := r.Ask()
	done := make(chan bool, 1)
	go func() { done <- r.Wait(ticket, time.Minute) }()
	r.Stop()
	if <-done {
		t.Fatal("a stopped worker covers nothing")
	}
	if _, wait := r.Ask(); wait {
		t.Fatal("after Stop nobody waits")
	}
}
