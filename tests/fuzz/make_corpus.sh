#!/bin/bash
# Regenerates tests/fuzz/corpus: real traces written by libdlprof.so under the
# reliability test programs (many kinds of calls, threads, fork children, a
# SIGKILLed process without end marker, drop mode, call stacks), mutated and
# joined by hand-made adversarial inputs (make_corpus.cc).
#
#   tests/fuzz/make_corpus.sh [BUILD_DIR]     (default: build)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
LIB="$BUILD/lib/libdlprof.so"
BIN="$BUILD/tests/reliability/programs"
OUT="$ROOT/tests/fuzz/corpus"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

mkdir -p "$TMP/data/sub" "$TMP/traces"
printf 'hello, world\n' > "$TMP/data/file"
touch "$TMP/data/sub/inner"
head -c 200000 /dev/urandom > "$TMP/data/in.bin"
traced() {  # traced NAME [VAR=VALUE...] -- PROGRAM ARGS...
  local name="$1"; shift
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  env "${vars[@]}" LD_PRELOAD="$LIB" DLPROF_DIR="$TMP/traces/$name" DLPROF_QUIET=1 "$@" \
    > /dev/null 2>&1 < /dev/null || true
}
traced errs -- "$BIN/errs" "$TMP/data"
traced forks -- "$BIN/forks" storm "$TMP/data/in.bin" 2
traced threads -- "$BIN/storm" rounds "$TMP/data/in.bin" 1 16 4
echo "S3CRET-corpus" | env LD_PRELOAD="$LIB" DLPROF_DIR="$TMP/traces/secret" DLPROF_QUIET=1 \
  "$BIN/secret" "$TMP/data" > /dev/null
traced drop DLPROF_ON_FULL=drop DLPROF_BUFFER_KB=4 -- "$BIN/storm" burst "$TMP/data/in.bin" 4 3000
traced stacks DLPROF_STACKS=1 -- "$BIN/workload" run "$TMP/data" 200
# A process killed with SIGKILL: no end marker.
env LD_PRELOAD="$LIB" DLPROF_DIR="$TMP/traces/killed" DLPROF_QUIET=1 DLPROF_FLUSH_MS=10 \
  "$BIN/sigs" pause "$TMP/data/in.bin" 2 1500 > "$TMP/killed.out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q PAUSED "$TMP/killed.out" 2>/dev/null && break; sleep 0.05; done
sleep 0.2
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true

rm -f "$OUT"/*
mkdir -p "$OUT"
"$BUILD/tests/fuzz/make_corpus" "$OUT" $(find "$TMP/traces" -name '*.dlprof' | sort)
du -sh "$OUT"
