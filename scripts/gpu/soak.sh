#!/usr/bin/env bash
# The 10-minute GPU memory run (bench.sh memory) outlasts one device call (10 minutes), so it
# runs detached from the call: runs ON THE GPU MACHINE from the repository root.
#   soak.sh start [SECONDS]  starts it in its own session and follows its log for SECONDS (590)
#   soak.sh collect          waits for it to end, copies its results to $OUT
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
S=/tmp/vinfer-soak
case ${1:-} in
start)
  mkdir -p $S
  OUT=$S setsid nohup bash scripts/gpu/bench.sh memory >$S/console.log 2>&1 </dev/null &
  end=$((SECONDS + ${2:-590}))
  while [ $SECONDS -lt $end ] && ! grep -q '"mode":"memory"' $S/bench.jsonl 2>/dev/null; do sleep 5; done
  cat $S/console.log ;;
collect)
  for _ in $(seq 120); do grep -q '"mode":"memory"' $S/bench.jsonl 2>/dev/null && break; pgrep -f 'mode memory' >/dev/null || break; sleep 2; done
  mkdir -p "$OUT" && cp $S/* "$OUT"/ && tail -c 3000 $S/console.log ;;
*) echo "usage: soak.sh start [SECONDS] | collect" >&2; exit 2 ;;
esac
