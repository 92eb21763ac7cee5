#!/bin/sh
# A fuzz smoke run for `make test`: BIN (a libFuzzer binary) for SECONDS,
# starting from the committed CORPUS, writing new inputs to a scratch
# directory (the committed corpus is only read). Exit status: libFuzzer's (0,
# or non-zero with the crash report on stderr and the input saved in TMPDIR).
# Usage: fuzz/smoke.sh BIN CORPUS SECONDS [DICT]
set -eu
bin=$1 corpus=$2 secs=$3 dict=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
set -- -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="${TMPDIR:-/tmp}/"
[ -n "$dict" ] && [ -f "$dict" ] && set -- "$@" -dict="$dict"
"$bin" "$@" "$work" "$corpus"
