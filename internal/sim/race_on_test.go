//go:build race

package sim

// raceEnabled: the race detector makes a simulated second cost several times the wall time,
// so the seeds run without it (make test-sim, make sim), and under it one short seed checks
// the harness itself.
const raceEnabled = true
