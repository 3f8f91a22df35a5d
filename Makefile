# The whole test suite: the library with the race detector, the interop module (official RocketMQ
# Go client), then short fuzz runs of the decoders. `.ci/run` runs `make test`.
GO       ?= go
FUZZTIME ?= 10s

.PHONY: test check test-root test-interop fuzz bench

test: check test-root test-interop fuzz

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd interop && $(GO) vet ./...

test-root:
	$(GO) test -race -count=1 ./...

# Without -race: the official client races with itself when a consumer shuts down while a
# rebalance it started on NOTIFY_CONSUMER_IDS_CHANGED is still running (its rmqClient.Shutdown
# writes the remoting client that InvokeSync reads). Our own code runs under -race in test-root,
# in-process and over TCP.
test-interop:
	cd interop && $(GO) test -count=1 ./...

# go test -fuzz takes one target of one package per run.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeFrame$$' -fuzztime=$(FUZZTIME) ./remoting

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./remoting ./storage ./internal/broker ./consumer
