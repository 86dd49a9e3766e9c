# Sourced by the scripts of scripts/gpu that run `vinfer run` for a while and then stop it the
# way an operator does (SIGINT), so that a crash on the way out is not read as a planned stop.
#
#   stop_after SECS GRACE CMD...   runs CMD, sends it SIGINT after SECS and SIGKILL GRACE seconds
#                                  later if still running; prints one line saying how it ended
#                                  and returns CMD's own status (timeout --preserve-status):
#                                  0 = stopped by SIGINT and exited cleanly (or ended by itself);
#                                  137 = did not stop within GRACE; anything else = it failed or
#                                  crashed (2: a Go fatal error, e.g. a signal handler without
#                                  SA_ONSTACK; 128+N: killed by signal N).
stop_after() {
  local secs=$1 grace=$2 rc=0
  shift 2
  timeout --preserve-status -s INT -k "$grace" "$secs" "$@" || rc=$?
  case $rc in
  0) echo "exit 0: stopped by SIGINT after ${secs}s (or ended) and exited cleanly" ;;
  137) echo "exit 137: FAILED: still running ${grace}s after SIGINT, killed" ;;
  *) echo "exit $rc: FAILED: crashed or failed (not a clean stop)" ;;
  esac
  return "$rc"
}
