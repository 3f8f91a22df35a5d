#!/usr/bin/env bash
# Runs every fuzz target of the root module for a short time each, so a new target is in
# `make test` as soon as it exists. go test -fuzz takes one target of one package per run.
# Usage: fuzz-all.sh DURATION   (e.g. 5s)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-5s}
go=${GO:-go}
n=0
for pkg in $($go list ./...); do
	dir=$($go list -f '{{.Dir}}' "$pkg")
	targets=$(grep -hoE '^func Fuzz[A-Za-z0-9_]+' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
	for t in $targets; do
		echo "fuzz $pkg $t ($dur)"
		$go test -run='^$' -fuzz="^${t}\$" -fuzztime="$dur" "$pkg" >/tmp/fuzz-$$.log 2>&1 || { cat /tmp/fuzz-$$.log; rm -f /tmp/fuzz-$$.log; exit 1; }
		tail -1 /tmp/fuzz-$$.log
		n=$((n + 1))
	done
done
rm -f /tmp/fuzz-$$.log
echo "fuzz: $n targets passed"
