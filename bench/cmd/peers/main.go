// Command peers runs the side-by-side benchmark of NATS JetStream, kfake + kgo and mq (issue 12):
// every case on every peer, each peer's node in this process, one JSON line per case and peer on
// stdout, then a Markdown table with the mq / NATS ratio. With -split, each node's broker runs
// in a child process (this executable again) and the clients in this one, for the TCP cases.
//
//	cd bench && go run ./cmd/peers            # 200,000 messages per case, a few minutes
//	cd bench && go run ./cmd/peers -quick     # a smoke run of seconds
//	cd bench && go run ./cmd/peers -split     # brokers in child processes
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/mqgo/mq/bench/peers"
	"github.com/rs/zerolog"
)

// Quick mode sizes: enough to see every case work, not to measure.
const (
	quickMsgs      = 10_000
	quickE2EMsgs   = 2_000
	quickStartRuns = 3
)

type flags struct {
	msgs, e2eMsgs, startRuns int
	quick, split             bool
	peers, cases, dir        string
	cpuProfile               string
	timeout                  time.Duration
}

func parseFlags() flags {
	var f flags
	flag.IntVar(&f.msgs, "n", 200_000, "messages per throughput case")
	flag.IntVar(&f.e2eMsgs, "e2e-n", 50_000, fmt.Sprintf("messages of the end-to-end case, sent at %d/s", peers.E2ERate))
	flag.IntVar(&f.startRuns, "start-runs", 20, "node starts measured per peer")
	flag.BoolVar(&f.quick, "quick", false, fmt.Sprintf("smoke run: -n %d -e2e-n %d -start-runs %d unless given", quickMsgs, quickE2EMsgs, quickStartRuns))
	flag.StringVar(&f.peers, "peers", "", "comma-separated peer ids to run (nats,kfake,mq; default all)")
	flag.StringVar(&f.cases, "cases", "", "comma-separated case ids to run (default all: "+strings.Join(caseIDs(), ",")+")")
	flag.BoolVar(&f.split, "split", false, "run each node's broker in a child process and the clients in this one; leaves out the cases that need the node in this process")
	flag.StringVar(&f.dir, "dir", "", "parent directory of the nodes' stores (default a new temporary directory)")
	flag.DurationVar(&f.timeout, "case-timeout", 3*time.Minute, "bound on one case on one peer")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "write this process's CPU profile to the file (in split mode the clients'; $"+peers.ChildCPUProfileEnv+"=DIR profiles the brokers)")
	flag.Parse()
	if f.quick {
		set := map[string]bool{}
		flag.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		if !set["n"] {
			f.msgs = quickMsgs
		}
		if !set["e2e-n"] {
			f.e2eMsgs = quickE2EMsgs
		}
		if !set["start-runs"] {
			f.startRuns = quickStartRuns
		}
	}
	return f
}

func main() {
	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}).With().Timestamp().Str("component", "bench-peers").Logger()
	if child, err := peers.ServeIfChild(); child {
		if err != nil {
			log.Error().Err(err).Msg("split-mode broker failed")
			os.Exit(1)
		}
		return
	}
	if err := run(parseFlags(), log); err != nil {
		log.Error().Err(err).Msg("run failed")
		os.Exit(1)
	}
}

func run(f flags, log zerolog.Logger) error {
	if f.msgs < 2 || f.e2eMsgs < 1 || f.startRuns < 1 {
		return fmt.Errorf("-n must be at least 2, -e2e-n and -start-runs at least 1")
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return errors.Join(err, pf.Close())
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	dir, err := storeDir(f.dir)
	if err != nil {
		return err
	}
	if f.dir == "" {
		defer os.RemoveAll(dir)
	}
	ps, err := selectPeers(f.peers)
	if err != nil {
		return err
	}
	cs, err := selectCases(f.cases, f.split)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := peers.Config{Msgs: f.msgs, E2EMsgs: f.e2eMsgs, StartRuns: f.startRuns, Dir: dir, Timeout: f.timeout, Split: f.split}
	enc := json.NewEncoder(os.Stdout)
	var results []peers.Result
	began := time.Now()
	// Case by case, every peer in turn, so that the peers of one row run close in time on a
	// shared machine.
	for _, c := range cs {
		for _, p := range ps {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Info().Str("case", c.ID).Str("peer", p.ID()).Msg("running")
			r := c.Run(ctx, p, cfg)
			if r.Error != "" {
				log.Warn().Str("case", c.ID).Str("peer", p.ID()).Str("error", r.Error).Msg("case failed")
			}
			results = append(results, r)
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	log.Info().Int64("took_ms", time.Since(began).Milliseconds()).Msg("done")
	fmt.Println()
	writeHeader(f, ps)
	fmt.Printf("**%s**\n\n", capitalize(mode(f.split)))
	return peers.WriteTable(os.Stdout, cs, ps, results)
}

func mode(split bool) string {
	if split {
		return "broker in a child process, clients in this one"
	}
	return "broker and clients in one process"
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func storeDir(dir string) (string, error) {
	if dir != "" {
		return dir, os.MkdirAll(dir, 0o755)
	}
	return os.MkdirTemp("", "mq-bench-peers-")
}

func writeHeader(f flags, ps []peers.Peer) {
	starts := fmt.Sprintf(", %d node starts", f.startRuns)
	if f.split {
		starts = ""
	}
	fmt.Printf("Measured %s on %s/%s, %d CPUs, %s; %d B random bodies; %d messages per throughput case, %d end to end at %d/s%s; %s.\n\n",
		time.Now().Format(time.DateOnly), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(),
		peers.BodyBytes, f.msgs, f.e2eMsgs, peers.E2ERate, starts, mode(f.split))
	for _, p := range ps {
		fmt.Printf("- %s: %s\n", p.Title(), p.Defaults())
	}
	fmt.Println()
}

func selectPeers(list string) ([]peers.Peer, error) {
	all := peers.All()
	if list == "" {
		return all, nil
	}
	var out []peers.Peer
	for _, id := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(p peers.Peer) bool { return p.ID() == id })
		if i < 0 {
			return nil, fmt.Errorf("unknown peer %q", id)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func caseIDs() []string {
	var ids []string
	for _, c := range peers.Cases() {
		ids = append(ids, c.ID)
	}
	return ids
}

func selectCases(list string, split bool) ([]peers.Case, error) {
	all := peers.Cases()
	if split {
		all = peers.SplitCases()
	}
	if list == "" {
		return all, nil
	}
	var out []peers.Case
	for _, id := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(c peers.Case) bool { return c.ID == id })
		if i < 0 {
			if split && slices.Contains(caseIDs(), id) {
				return nil, fmt.Errorf("case %q needs the node in this process: not run with -split", id)
			}
			return nil, fmt.Errorf("unknown case %q", id)
		}
		out = append(out, all[i])
	}
	return out, nil
}
