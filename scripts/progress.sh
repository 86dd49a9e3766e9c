# Sourced by the scripts that run long, quiet steps once per machine (debootstrap, FFmpeg's
# build, the static vinfer build) and by those that find their results:
#
#   vinfer_cache                     prints the cache folder: $VINFER_CACHE, else
#                                    ${XDG_CACHE_HOME:-$HOME/.cache}/vinfer (outside any clone)
#   progress_run LABEL LOG CMD...    runs CMD with its output in LOG; every 30 s in which LOG grew,
#                                    prints "[LABEL] 2m30s: <LOG's last line>" to stderr; on
#                                    failure prints LOG's last 30 lines and its first 20 with
#                                    "error". Returns CMD's status.
#
# A step that prints nothing for long is stuck, not slow: e2e/image stops its build of the binary
# only after 10 minutes without a line (docs/deploy.md).
vinfer_cache() { printf '%s\n' "${VINFER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vinfer}"; }

progress_run() {
  local label=$1 logf=$2
  shift 2
  local start=$SECONDS next=$((SECONDS + 30)) last=-1 size rc=0
  "$@" >"$logf" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ "$SECONDS" -ge "$next" ]; then
      next=$((SECONDS + 30))
      size=$(stat -c %s "$logf" 2>/dev/null || echo 0)
      if [ "$size" != "$last" ]; then
        last=$size
        printf '[%s] %dm%02ds: %s\n' "$label" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) \
          "$(tail -n 1 "$logf" | cut -c1-120)" >&2
      fi
    fi
  done
  wait "$pid" || rc=$?
  if [ "$rc" -eq 0 ]; then
    printf '[%s] done in %dm%02ds\n' "$label" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) >&2
    return 0
  fi
  printf '[%s] failed (exit %d); the last lines of %s:\n' "$label" "$rc" "$logf" >&2
  tail -n 30 "$logf" >&2
  if grep -qi 'error' "$logf"; then # an error line above the last ones (parallel jobs go on)
    printf '[%s] its lines with "error":\n' "$label" >&2
    grep -i -m 20 'error' "$logf" >&2
  fi
  return "$rc"
}
