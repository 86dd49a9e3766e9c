#!/usr/bin/env bash
# Memory soak: runs `vinfer run` for MINUTES at a constant stream count and tells whether its
# memory levels off (issue 29 item 8). Usage, from the repository root:
#
#   scripts/soak.sh                       # 10 min, 3 looping CPU file streams, OUT=.build/soak
#   MINUTES=15 STREAMS=4 MAX_FPS=2 scripts/soak.sh
#   CONFIG=my.yaml scripts/soak.sh        # your own streams (the script adds --http and --jsonl none)
#
# Every PERIOD (10) s one CSV row goes to $OUT/soak.csv:
#   t_s              seconds since start
#   rss_mib          VmRSS of the process (/proc/PID/status)
#   go_heap_mib      go_memstats_heap_inuse_bytes (live Go heap spans)
#   go_resident_mib  Go's own memory likely resident: go_memstats_sys_bytes −
#                    go_memstats_heap_released_bytes (heap, stacks, runtime metadata)
#   native_mib       rss_mib − go_resident_mib: FFmpeg, ONNX Runtime, malloc (cgo side), binary text
#   c_inuse_mib      vinfer_native_heap_inuse_bytes: C heap allocated and not freed (mallinfo2)
#   c_held_mib       vinfer_native_heap_held_bytes: C heap malloc holds from the system
#   arenas           vinfer_native_heap_arenas: glibc malloc arenas (each keeps its own free memory)
#   goroutines       go_goroutines
#   fds              process_open_fds
#   threads          Threads of /proc/PID/status
#   frames           vinfer_frames_inferred_total, all streams (proves the run is alive)
# At the end it prints, for rss, go_heap, native and the C heap, the least-squares slope
# (MiB/min) over the first and over the last half of the run, and a verdict: "levelled off"
# when the last half's RSS slope is within ±LEVEL (0.25) MiB/min, else "still growing". Go heap
# profiles at one quarter and at the end ($OUT/heap-q1.pb.gz, $OUT/heap-end.pb.gz) give the Go
# side's diff:
#   go tool pprof -diff_base $OUT/heap-q1.pb.gz -sample_index=inuse_space $VINFER $OUT/heap-end.pb.gz
# Exit status: 0 levelled off, 1 still growing, 2 the run failed (vinfer died, too few samples).
#
# Load: realtime file streams capped at MAX_FPS inferred frames a second with one ONNX Runtime
# thread; 4 streams at 2 fps took 0.28 of a CPU core (2026-12-06), the default 3 a little less.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
MINUTES=${MINUTES:-10}
STREAMS=${STREAMS:-3}
MAX_FPS=${MAX_FPS:-2}
PERIOD=${PERIOD:-10}
LEVEL=${LEVEL:-0.25}
OUT=${OUT:-$root/.build/soak}
VINFER=${VINFER:-$root/bin/vinfer}
ADDR=${ADDR:-127.0.0.1:18089}
A=$root/assets
mkdir -p "$OUT"
[ -x "$VINFER" ] || { echo "soak: $VINFER is not built (scripts/setup.sh, or VINFER=PATH)" >&2; exit 2; }

cfg=${CONFIG:-}
if [ -z "$cfg" ]; then
	cfg=$OUT/soak.yaml
	clips=(one-by-one-person-detection.mp4 car-detection.mp4 person-bicycle-car-detection_reenc.mp4 person-bicycle-car_hevc.mp4)
	{
		echo "models:"
		echo "  - {name: yolox, path: $A/models/yolox_nano_416.onnx, score_threshold: 0.3, intra_op_threads: 1, max_batch: 4}"
		echo "streams:"
		for i in $(seq 1 "$STREAMS"); do
			c=${clips[$(((i - 1) % ${#clips[@]}))]}
			# A zone and a line over the whole lower half: tracks come and go on every loop, so
			# the per-track and per-event state of analytics is exercised as on a camera.
			echo "  - {id: soak$i, source: $A/videos/$c, model: yolox, loop: true, realtime: true, max_fps: $MAX_FPS,"
			echo "     zones: [{name: low, polygon: [[0, 216], [768, 216], [768, 432], [0, 432]], loiter: 3s}],"
			echo "     lines: [{name: mid, points: [[384, 0], [384, 432]]}]}"
		done
	} >"$cfg"
fi

csv=$OUT/soak.csv
log=$OUT/vinfer.log
echo "t_s,rss_mib,go_heap_mib,go_resident_mib,native_mib,c_inuse_mib,c_held_mib,arenas,goroutines,fds,threads,frames" >"$csv"
"$VINFER" run --config "$cfg" --http "$ADDR" --jsonl none >"$log" 2>&1 &
pid=$!
stop() { kill -INT $pid 2>/dev/null; local w=0; while kill -0 $pid 2>/dev/null && [ $w -lt 300 ]; do sleep 0.1; w=$((w + 1)); done; kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null; }
trap 'stop; exit 2' INT TERM

# metric NAME FILE: the sum of a metric's samples in a Prometheus text exposition (0 if absent).
metric() { awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $2; f = 1} END {printf "%.0f", f ? s : 0}' "$2"; }
scrape() { curl -fsS --max-time 5 "http://$ADDR/$1" -o "$2" 2>/dev/null; }

# Wait (up to 120 s) for the API before the clock starts: model loading is not the soak.
w=0
until scrape metrics "$OUT/m.txt"; do
	kill -0 $pid 2>/dev/null || { echo "soak: vinfer exited; see $log" >&2; tail -5 "$log" >&2; exit 2; }
	[ $w -ge 240 ] && { echo "soak: no /metrics on $ADDR after 120 s" >&2; stop; exit 2; }
	sleep 0.5
	w=$((w + 1))
done
dur=$((MINUTES * 60))
echo "soak: pid $pid, ${CONFIG:-$STREAMS stream(s)}, $MINUTES min, a sample every ${PERIOD}s into $csv"
t0=$(date +%s)
q1=0
while :; do
	t=$(($(date +%s) - t0))
	kill -0 $pid 2>/dev/null || { echo "soak: vinfer exited at ${t}s; see $log" >&2; tail -5 "$log" >&2; exit 2; }
	if scrape metrics "$OUT/m.txt"; then
		rss=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status)
		thr=$(awk '/^Threads/ {print $2}' /proc/$pid/status)
		m=$OUT/m.txt
		awk -v t="$t" -v rss="$rss" -v heap="$(metric go_memstats_heap_inuse_bytes $m)" \
			-v sys="$(metric go_memstats_sys_bytes $m)" -v rel="$(metric go_memstats_heap_released_bytes $m)" \
			-v ci="$(metric vinfer_native_heap_inuse_bytes $m)" -v ch="$(metric vinfer_native_heap_held_bytes $m)" \
			-v ar="$(metric vinfer_native_heap_arenas $m)" \
			-v g="$(metric go_goroutines $m)" -v fds="$(metric process_open_fds $m)" -v thr="$thr" \
			-v fr="$(metric vinfer_frames_inferred_total $m)" \
			'BEGIN {M = 1048576; r = rss * 1024 / M; gr = (sys - rel) / M
				printf "%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%d,%d,%d,%d\n", t, r, heap / M, gr, r - gr, ci / M, ch / M, ar, g, fds, thr, fr}' >>"$csv"
	fi
	if [ $q1 = 0 ] && [ $t -ge $((dur / 4)) ]; then
		scrape "debug/pprof/heap" "$OUT/heap-q1.pb.gz" && q1=1
	fi
	[ $t -ge $dur ] && break
	sleep "$PERIOD"
done
scrape "debug/pprof/heap" "$OUT/heap-end.pb.gz"
scrape "debug/pprof/goroutine?debug=1" "$OUT/goroutines-end.txt"
rm -f "$OUT/m.txt"
stop
trap - INT TERM

# slope COL FROM TO: least-squares slope of column COL against t over rows with FROM ≤ t < TO,
# in MiB a minute.
slope() {
	awk -F, -v c="$1" -v a="$2" -v b="$3" 'NR > 1 && $1 >= a && $1 <= b {n++; x = $1 / 60; y = $c; sx += x; sy += y; sxx += x * x; sxy += x * y}
		END {d = n * sxx - sx * sx; if (n > 2 && d > 0) printf "%+.2f", (n * sxy - sx * sy) / d; else printf "n/a"}' "$csv"
}
last=$(tail -1 "$csv" | cut -d, -f1)
h=$((last / 2))
echo "soak: $(($(wc -l <"$csv") - 1)) samples over ${last}s"
awk -F, 'NR == 2 {f = $0} NR > 1 {l = $0} END {print "  first: " f; print "  last:  " l}' "$csv"
printf "  slope MiB/min       %12s %12s\n" "first half" "last half"
for col in 2:rss 3:go_heap 5:native 6:c_heap_inuse 7:c_heap_held; do
	printf "  %-18s %12s %12s\n" "${col#*:}" "$(slope "${col%%:*}" 0 $h)" "$(slope "${col%%:*}" $h "$last")"
done
s=$(slope 2 $h "$last")
if [ "$s" = n/a ]; then
	echo "soak: too few samples for a slope (run longer, or a shorter PERIOD)"
	exit 2
fi
if awk -v s="$s" -v l="$LEVEL" 'BEGIN {exit !(s <= l && s >= -l)}'; then
	echo "soak: RSS levelled off (last half ${s} MiB/min, within ±$LEVEL)"
	exit 0
fi
echo "soak: RSS still growing (last half ${s} MiB/min, beyond ±$LEVEL)"
exit 1
