# The whole test suite: the library with the race detector, then the interop module (official
# RocketMQ Go client, the Node.js 5.x SDK), the side-by-side benchmark's tests and a short run of
# every fuzz target, two at a time. `.ci/run` runs `make test`.
GO       ?= go
FUZZTIME ?= 4s
# Pinned, run through go run so that neither module's go.mod carries it.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test check test-root test-side test-sim test-interop test-bench fuzz bench bench-peers bench-peers-split soak sim

test: check test-root test-side

# Interop mostly waits (the official clients' fixed timers, Node.js processes, invisible times),
# so the CPU-bound simulation seeds, bench matrix and fuzzing run beside it; each target's output
# is printed whole when it ends.
test-side:
	$(MAKE) --no-print-directory -j2 --output-sync=target test-interop test-sim test-bench fuzz

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd interop && $(GO) vet ./...
	cd bench && $(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd interop && $(GO) run $(STATICCHECK) ./...
	cd bench && $(GO) run $(STATICCHECK) ./...

test-root:
	$(GO) test -race -count=1 ./...

# The simulation's seeds without the race detector (test-root runs the package with it, and there
# one short seed): a few seeds and every regression seed, about a minute (internal/sim, ciSeeds).
test-sim:
	$(GO) test -count=1 -run '^TestSim(Regressions)?$$' ./internal/sim

# Without -race: the official client races with itself when a consumer shuts down while a
# rebalance it started on NOTIFY_CONSUMER_IDS_CHANGED is still running (its rmqClient.Shutdown
# writes the remoting client that InvokeSync reads). Our own code runs under -race in test-root,
# in-process and over TCP.
test-interop:
	cd interop && $(GO) test -count=1 ./...

# The side-by-side benchmark's own tests: every case on every peer with a few messages.
test-bench:
	cd bench && $(GO) test -race -count=1 ./...

# Every fuzz target of the root module for FUZZTIME each (scripts/fuzz-all.sh finds them):
# smoke runs of a few seconds, since test-root already replays each target's seeds and
# testdata/fuzz crashers.
fuzz:
	GO=$(GO) scripts/fuzz-all.sh $(FUZZTIME)

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./remoting ./storage ./internal/broker ./producer ./consumer

# NATS JetStream, kfake + kgo and mq side by side (bench/, its own module; issue 12): one JSON
# line per case and peer, then the Markdown table. Not part of test: it takes minutes.
# BENCH_PEERS_FLAGS passes flags, e.g. BENCH_PEERS_FLAGS=-quick.
bench-peers:
	cd bench && $(GO) run ./cmd/peers $(BENCH_PEERS_FLAGS)

# The same with each broker in a child process and the clients in this one, as deployments run
# them: loopback round trips within one process favour brokers on Go's netpoller. The cases
# that need the node in this process (in-process send, node start) are left out.
bench-peers-split:
	cd bench && $(GO) run ./cmd/peers -split $(BENCH_PEERS_FLAGS)

# The kill loops at length (issue 32): examples/mqnode's TestBinaryKillLoop SIGKILLs mqnode
# processes KILLS times in each mode (one node with SYNC_FLUSH, a SYNC_MASTER and its slave,
# three brokers in controller mode) under load, restarting them, and checks after every restart
# that nothing acknowledged was lost. test-root runs it with 3 kills a mode. SOAK_FLAGS passes
# more, e.g. SOAK_FLAGS='-killseed 42 -killtime 30m -nodelogs /tmp/logs'.
KILLS ?= 100
# It also runs the topic-name flood at its acceptance size (50,000 names against the default
# MaxTopics, 5,000; make test runs 6,000 against 600).
soak:
	$(GO) test -count=1 -timeout 4h -v -run '^TestBinaryKillLoop$$' ./examples/mqnode -args -kills $(KILLS) $(SOAK_FLAGS)
	MQ_FLOOD_TOPICS=50000 MQ_FLOOD_MAX_TOPICS=5000 $(GO) test -count=1 -timeout 1h -run '^TestHostileFlood$$' .

# The seeded simulation of a broker group under faults (internal/sim, issue 32): SEEDS seeds
# from SIM_FIRST on, each its own cluster, workload and schedule of faults over simulated
# minutes; a failing seed prints itself, its event log and how to run it again. SEED=n runs
# seed n alone, twice, shows its event log and checks that both runs give the same digest.
# SIM_TAGS=simbug builds the store with a bug put in on purpose (a SYNC_FLUSH append
# acknowledged before its fsync), which seeds with power cuts catch (SEED=10 on every run). Without
# -race: a simulated second costs wall time per event, and the race detector multiplies it.
SEEDS     ?= 20
SIM_FIRST ?= 1
SIM_TAGS  ?=

sim:
ifdef SEED
	$(GO) test -count=1 -timeout=0 -tags '$(SIM_TAGS)' -run '^TestSim$$' -v ./internal/sim -sim.seed=$(SEED)
else
	$(GO) test -count=1 -timeout=0 -tags '$(SIM_TAGS)' -run '^TestSim$$' -v ./internal/sim -sim.seeds=$(SEEDS) -sim.first=$(SIM_FIRST)
endif
