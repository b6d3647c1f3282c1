#!/usr/bin/env bash
# What watching a run costs (docs/design.md §15): the storage-bound experiment's JCT with the metrics
# endpoint and the live page on, each polled once a second as a Prometheus scraper and an open page would,
# against both off. Runs alternate off/on so drift of a shared machine hits both alike; prints each JCT and
# the medians. REPS (3) and POLICY (dualpath) choose what is run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${DUALPATH_BIN:-$here/../../build/apps/dualpath}"
reps="${REPS:-3}"
policy="${POLICY:-dualpath}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

jct() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["jct_s"])' "$1"; }

run_off() {
  "$bin" run --cluster "$here/storage_bound.toml" --trace "$here/storage_bound.jsonl" --policy "$policy" \
    --quiet --report "$1" 2>"$1.err"
}

run_on() {
  "$bin" run --cluster "$here/storage_bound.toml" --trace "$here/storage_bound.jsonl" --policy "$policy" \
    --quiet --report "$1" --metrics-port 0 --ui-port 0 2>"$1.err" &
  local pid=$! metrics="" page="" polls=0
  for _ in $(seq 100); do
    metrics=$(grep -ao 'metrics: http://[0-9.:]*/metrics' "$1.err" | head -1 | cut -d' ' -f2 || true)
    page=$(grep -ao 'cluster page: http://[0-9.:]*/' "$1.err" | head -1 | cut -d' ' -f3 || true)
    [[ -n "$metrics" && -n "$page" ]] && break
    sleep 0.1
  done
  while kill -0 "$pid" 2>/dev/null; do
    curl -s -m 2 "${page}state" >/dev/null || true
    curl -s -m 2 "$metrics" >/dev/null || true
    polls=$((polls + 1))
    sleep 1
  done
  wait "$pid"
  echo "  ($polls polls of /state and /metrics)" >&2
}

off=() on=()
for r in $(seq "$reps"); do
  run_off "$work/off-$r.json"; off+=("$(jct "$work/off-$r.json")")
  run_on "$work/on-$r.json"; on+=("$(jct "$work/on-$r.json")")
  echo "rep $r: off ${off[-1]} s, on ${on[-1]} s" >&2
done
python3 - "${off[*]}" "${on[*]}" <<'PY'
import statistics, sys
off, on = ([float(x) for x in a.split()] for a in sys.argv[1:3])
m_off, m_on = statistics.median(off), statistics.median(on)
print(f"off: {off} median {m_off:.3f} s")
print(f"on:  {on} median {m_on:.3f} s")
print(f"on/off: {m_on / m_off:.4f} ({100 * (m_on / m_off - 1):+.2f}%)")
PY
