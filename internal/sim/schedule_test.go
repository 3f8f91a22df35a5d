package sim

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The schedule marks exactly the actions that touch a consumer (c0, c1: it leaves, returns,
// pauses, resumes, or is cut from or healed to someone, an isolation cutting it from the
// isolated node), since after those the group's offsets may go back for a while
// (consumerSettle); a producer (p0) or a node alone (a kill, a disk, a clock) is not such an
// action.
func TestScheduleMarksConsumerActions(t *testing.T) {
	c := &cluster{cfg: Config{Consumers: 2, Chaos: 30 * time.Minute},
		nameServers: []*simNode{{name: "ns0"}}, brokers: []*simNode{{name: "b0", broker: true}, {name: "b1", broker: true}},
		clients: []string{"p0", "c0", "c1"}}
	party := regexp.MustCompile(`(^| |-)c[01]( |-|$)`)
	var marked, unmarked int
	for seed := range uint64(5) {
		for _, a := range schedule(rand.New(rand.NewPCG(seed, 1)), c) {
			isolation := strings.HasPrefix(a.what, "isolate ") || strings.HasPrefix(a.what, "rejoin ")
			if want := isolation || party.MatchString(a.what); a.consumer != want {
				t.Errorf("seed %d: %q marked %v, want %v", seed, a.what, a.consumer, want)
			}
			if a.consumer {
				marked++
			} else {
				unmarked++
			}
		}
	}
	if marked == 0 || unmarked == 0 {
		t.Fatalf("%d actions marked, %d not: the schedules drew too few kinds to tell", marked, unmarked)
	}
}
