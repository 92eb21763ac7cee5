#!/bin/sh
# Build the Helm render harness (render/main.go) offline, from Debian's Go
# packages only (GOPATH mode, no module proxy), as tests/integration/go/build.sh
# does for the gRPC clients.
#
#   tests/deploy/helm/render/build.sh OUTDIR      -> OUTDIR/render
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

missing=""
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
gocode=/usr/share/gocode/src
[ -e $gocode/github.com/Masterminds/sprig/functions.go ] || missing="$missing golang-github-masterminds-sprig-dev"
[ -e $gocode/gopkg.in/yaml.v3/yaml.go ] || missing="$missing golang-gopkg-yaml.v3-dev"
# yaml.v2 (toYaml, as helm's sigs.k8s.io/yaml writes) comes with sprig's dependencies.
[ -e $gocode/gopkg.in/yaml.v2/yaml.go ] || missing="$missing golang-gopkg-yaml.v2-dev"
if [ -n "$missing" ]; then
    echo "$0: missing Debian package(s):$missing" >&2
    echo "    apt-get install$missing" >&2
    exit 1
fi

GOPATH="$out/gopath:/usr/share/gocode"
GO111MODULE=off
GOPROXY=off
GOFLAGS=
if [ -z "${GOCACHE:-}" ]; then
    if [ -n "${HOME:-}" ] && mkdir -p "$HOME/.cache" 2>/dev/null && [ -w "$HOME/.cache" ]; then
        GOCACHE="$HOME/.cache/go-build"
    else
        GOCACHE="$out/gocache"
    fi
fi
export GOPATH GO111MODULE GOPROXY GOFLAGS GOCACHE
mkdir -p "$out/gopath"
cd "$here"
go build -o "$out/render" .
echo "built $out/render"
