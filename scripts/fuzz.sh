#!/usr/bin/env bash
# Long fuzzing campaigns over every decoder of outside bytes (docs/design.md §16, "Fuzzing"):
#   scripts/fuzz.sh [runs-per-decoder] [decoder ...]      (default 1000000 runs, every decoder)
# Configures build-fuzz/ with clang, libFuzzer, ASan and UBSan (DUALPATH_FUZZ=ON), builds only the fuzz
# targets and the libraries they need, writes the seed corpora (the replay test's seeds and regressions),
# runs each decoder's fuzzer for the given number of runs, two at a time, and prints decoder, runs,
# crashes and seconds. Crash inputs are kept in build-fuzz/artifacts/<decoder>/, logs in build-fuzz/logs/.
# Environment: FUZZ_BUILD (build dir), FUZZ_JOBS (fuzzers at once, default 2), FUZZ_MAX_TIME (seconds
# per decoder, 0 = no bound), FUZZ_SKIP_BUILD=1 (reuse the built binaries).
set -euo pipefail

# Builds and campaigns use both cores: one at a time, with every other build on this machine.
if [[ -z "${DUALPATH_FUZZ_LOCKED:-}" ]]; then
  DUALPATH_FUZZ_LOCKED=1 exec flock /tmp/dualpath-build.lock "$0" "$@"
fi

runs=${1:-1000000}
shift || true
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-2}
max_time=${FUZZ_MAX_TIME:-0}

if [[ -z "${FUZZ_SKIP_BUILD:-}" ]]; then
  # -O1 with assertions kept (a toml++ or nlohmann assertion is a finding too); every library is
  # instrumented for coverage (fuzzer-no-link), only the fuzzer binary links libFuzzer's main.
  # toml++'s internal assertions are off, as in our Release build: one (parse_key) aborts on a bad key
  # character that the parser goes on to refuse (bench/experiments/fuzz_result.md).
  flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link"
  flags+=" -include $root/tests/fuzz/libfuzzer/toml_assert.hpp"
  cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDUALPATH_FUZZ=ON \
    -DDUALPATH_CUDA=OFF -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_CXX_FLAGS_FUZZ="$flags" -DCMAKE_C_FLAGS_FUZZ="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
  cmake --build "$build" --target dualpath_fuzzer dualpath_fuzz_seeds -j2
fi

fuzzer=$build/tests/fuzz/dualpath_fuzzer
corpus=$build/corpus
rm -rf "$build/seeds" "$build/logs" "$build/results"
mkdir -p "$build/logs" "$build/results" "$corpus"
"$build/tests/fuzz/dualpath_fuzz_seeds" "$build/seeds" >/dev/null
if [[ $# -gt 0 ]]; then
  decoders=("$@")
else
  mapfile -t decoders < <(find "$build/seeds" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
fi

# One decoder: its corpus grows in corpus/<name> (kept between campaigns), seeds read from seeds/<name>.
fuzz_one() {
  local name=$1 art=$build/artifacts/$1 log=$build/logs/$1.log
  mkdir -p "$art" "$corpus/$name"
  rm -f "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*
  local dict=()
  [[ -f $build/seeds/$name.dict ]] && dict=(-dict="$build/seeds/$name.dict")
  local start=$SECONDS rc=0
  DUALPATH_FUZZ_TARGET=$name "$fuzzer" -runs="$runs" -max_total_time="$max_time" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" "$corpus/$name" "$build/seeds/$name" >"$log" 2>&1 || rc=$?
  local done_runs crashes
  done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crashes=$(find "$art" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "${done_runs:-?}" "$crashes" "$((SECONDS - start))" "$rc" >"$build/results/$name"
}
export -f fuzz_one
export build corpus fuzzer runs max_time

start=$SECONDS
printf '%s\n' "${decoders[@]}" | xargs -P "$jobs" -I{} bash -c 'fuzz_one "$@"' _ {}

printf '\n%-18s %10s %8s %8s\n' decoder runs crashes seconds
total_crashes=0
for name in "${decoders[@]}"; do
  IFS=$'\t' read -r n r c s rc <"$build/results/$name"
  printf '%-18s %10s %8s %8s\n' "$n" "$r" "$c" "$s"
  total_crashes=$((total_crashes + c))
  if [[ $c -gt 0 || $rc -ne 0 ]]; then
    echo "  $n: exit $rc, see $build/logs/$n.log and $build/artifacts/$n/"
  fi
done
echo "wall time: $((SECONDS - start)) s for ${#decoders[@]} decoders, $runs runs each, $jobs at a time"
[[ $total_crashes -eq 0 ]]
