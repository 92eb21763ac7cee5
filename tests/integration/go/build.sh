#!/bin/sh
# Build the Go test client (kedaclient), the Go reference server
# (baseline-server) and the fake kubelet pod-resources server (fake-kubelet)
# offline, from Debian's packages only (GOPATH mode, no module proxy).
#
#   tests/integration/go/build.sh OUTDIR
#
# Produces OUTDIR/kedaclient, OUTDIR/baseline-server and OUTDIR/fake-kubelet.
# Generated Go code and the GOPATH live under OUTDIR/gopath (never in the
# source tree). Idempotent: a second run regenerates nothing that is up to
# date and lets the Go build cache skip the compile.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

missing=""
need_cmd() { # command debian-package
    command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
need_file() { # path debian-package
    [ -e "$1" ] || missing="$missing $2"
}
need_cmd go golang-go
need_cmd protoc protobuf-compiler
need_cmd protoc-gen-go-grpc protoc-gen-go-grpc
gocode=/usr/share/gocode/src
need_file $gocode/google.golang.org/grpc/server.go golang-google-grpc-dev
need_file $gocode/google.golang.org/protobuf/cmd/protoc-gen-go/main.go golang-google-protobuf-dev
# 1-5 (APIv2-backed) replaces 1-3, which grpc-go's package pulls in by default;
# registry.go exists only from 1.4 on.
need_file $gocode/github.com/golang/protobuf/proto/registry.go golang-github-golang-protobuf-1-5-dev
if [ -n "$missing" ]; then
    echo "$0: missing Debian package(s):$missing" >&2
    echo "    apt-get install$missing" >&2
    exit 1
fi

GOPATH="$out/gopath:/usr/share/gocode"
GO111MODULE=off
GOPROXY=off
GOFLAGS=
# The default cache ($HOME/.cache/go-build) is shared between build trees;
# without a usable HOME keep one next to the outputs.
if [ -z "${GOCACHE:-}" ]; then
    if [ -n "${HOME:-}" ] && mkdir -p "$HOME/.cache" 2>/dev/null && [ -w "$HOME/.cache" ]; then
        GOCACHE="$HOME/.cache/go-build"
    else
        GOCACHE="$out/gocache"
    fi
fi
export GOPATH GO111MODULE GOPROXY GOFLAGS GOCACHE

gp="$out/gopath"
mkdir -p "$gp/bin" "$gp/src/kgs"

# 1. protoc-gen-go from Debian's sources (Debian ships no binary of it).
if [ ! -x "$gp/bin/protoc-gen-go" ]; then
    go build -o "$gp/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
fi

# 2. Go code for externalscaler.proto (go_package "kgs/externalscaler").
#    grpc.health.v1 comes from grpc-go's own grpc_health_v1 package: generating
#    proto/health.proto as well would register the same proto names twice.
gen="$gp/src/kgs/externalscaler/externalscaler.pb.go"
proto="$root/proto/externalscaler.proto"
if [ ! -f "$gen" ] || [ "$proto" -nt "$gen" ] || [ "$0" -nt "$gen" ]; then
    rm -rf "$gp/src/kgs/externalscaler"
    PATH="$gp/bin:$PATH" protoc -I "$root/proto" \
        --go_out="$gp/src" --go_opt=paths=import \
        --go-grpc_out="$gp/src" --go-grpc_opt=paths=import \
        "$proto"
fi

# 2b. Go code for the kubelet's podresources.proto (go_package
#     "kgs/podresources"; proto package v1), for fake-kubelet.
gen="$gp/src/kgs/podresources/podresources.pb.go"
proto="$root/proto/podresources.proto"
if [ ! -f "$gen" ] || [ "$proto" -nt "$gen" ] || [ "$0" -nt "$gen" ]; then
    rm -rf "$gp/src/kgs/podresources"
    PATH="$gp/bin:$PATH" protoc -I "$root/proto" \
        --go_out="$gp/src" --go_opt=paths=import \
        --go-grpc_out="$gp/src" --go-grpc_opt=paths=import \
        "$proto"
fi

# 3. The binaries. Their sources stay in the tree; imports resolve via GOPATH.
cd "$here"
go build -o "$out/kedaclient" ./kedaclient
go build -o "$out/baseline-server" ./baseline-server
go build -o "$out/fake-kubelet" ./fake-kubelet
echo "built $out/kedaclient $out/baseline-server $out/fake-kubelet"
