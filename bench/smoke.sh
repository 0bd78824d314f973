#!/usr/bin/env bash
# make bench-smoke: every bench in bench/ at a tiny size, so none can rot unnoticed. Each must
# exit 0, and each exits non-zero by itself when a measured request did not answer 200 (or its
# run failed). Targets (PASS/FAIL lines) are not judged at this size. Logs: var/bench-smoke/.
# bench/fuzz.py is not repeated here: CI runs it bounded (make fuzz-ci).
#
# Two lanes run side by side (the benches are single-threaded; their databases, files and ports
# are their own). Needs PostgreSQL on 127.0.0.1:5432 for bench/load.sh (which installs wrk when
# missing). The first run installs Checkov into bench/.checkov-venv (untracked); later runs
# reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
LOGS=var/bench-smoke
rm -rf "$LOGS" && mkdir -p "$LOGS"
export SECRET_KEY=bench-smoke-only
# SQLite for the Python benches whatever the caller's DATABASE_URL says; load.sh is PostgreSQL.
unset DATABASE_URL

LANE_A=(
  "sync_scale|$PY bench/sync_scale.py --tiny --db sqlite"
  "telemetry_scale|$PY bench/telemetry_scale.py --tiny --db sqlite"
  "checks_vs_checkov|$PY bench/checks_vs_checkov.py --tiny --keep-venv"
)
LANE_B=(
  "export_scale|$PY bench/export_scale.py --tiny --db sqlite --workers 1"
  "sync_scale_worst|$PY bench/sync_scale.py --tiny --worst --no-live --db sqlite"
  "score_cpu|$PY bench/score_cpu.py --tiny --worst --runs 2"
  "load|env TINY=1 WORKERS=1 bench/load.sh"
)

lane() {  # "name|command" ...: in order, stopping at the first failure
  for entry in "$@"; do
    IFS='|' read -r name command <<<"$entry"
    start=$SECONDS
    if $command >"$LOGS/$name.log" 2>&1; then
      echo "   ok    $name ($((SECONDS - start)) s)"
    else
      code=$?
      {
        echo "   FAIL  $name exited $code after $((SECONDS - start)) s; the end of $LOGS/$name.log:"
        tail -n 25 "$LOGS/$name.log"
      } >&2
      return 1
    fi
  done
}

start_all=$SECONDS
lane "${LANE_A[@]}" & a=$!
lane "${LANE_B[@]}" & b=$!
failed=0
wait "$a" || failed=1
wait "$b" || failed=1
count=$((${#LANE_A[@]} + ${#LANE_B[@]}))
if [ "$failed" = 1 ]; then
  echo "== bench smoke FAILED after $((SECONDS - start_all)) s" >&2
  exit 1
fi
echo "== bench smoke: $count benches in $((SECONDS - start_all)) s (load average $(cut -d' ' -f1 /proc/loadavg))"
