#!/usr/bin/env bash
# Generates the Go code of RocketMQ 5's gRPC API from proto/ into internal/grpcapi/apiv2/.
#
#   scripts/protogen.sh [OUTROOT]
#
# OUTROOT is the directory standing for the module root (default: the repository); the code
# lands in OUTROOT/internal/grpcapi/apiv2. internal/grpcapi's test generates into a temporary
# OUTROOT and compares, so the committed code cannot go stale.
#
# Pinned: protoc is Debian's protobuf-compiler (installed here with apt-get when missing; the
# generated files name its version), the Go plugins run through `go run` at the versions below.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
PROTOC_VERSION="libprotoc 3.21.12"

out=${1:-$root}
case $out in /*) ;; *) out="$root/$out" ;; esac

if ! command -v protoc >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
	$sudo apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq protobuf-compiler >/dev/null
fi
if [ "$(protoc --version)" != "$PROTOC_VERSION" ]; then
	echo "protogen: want protoc \"$PROTOC_VERSION\" (Debian 12's protobuf-compiler), have \"$(protoc --version)\"" >&2
	exit 1
fi

# protoc runs plugins as executables; these wrappers hand each to go run at its pinned version.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
printf '#!/bin/sh\nexec go run %s "$@"\n' "$PROTOC_GEN_GO" >"$bin/protoc-gen-go"
printf '#!/bin/sh\nexec go run %s "$@"\n' "$PROTOC_GEN_GO_GRPC" >"$bin/protoc-gen-go-grpc"
chmod +x "$bin/protoc-gen-go" "$bin/protoc-gen-go-grpc"

mkdir -p "$out/internal/grpcapi/apiv2"
rm -f "$out"/internal/grpcapi/apiv2/*.pb.go
# Run from the repository so generated headers name proto files by their relative path.
PATH="$bin:$PATH" protoc \
	--proto_path=proto \
	--go_out="$out" --go_opt=module=github.com/mqgo/mq \
	--go-grpc_out="$out" --go-grpc_opt=module=github.com/mqgo/mq \
	proto/apache/rocketmq/v2/definition.proto proto/apache/rocketmq/v2/service.proto
