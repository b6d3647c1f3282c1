#!/usr/bin/env bash
# The GPU check, sized for a short device lease (well under 8 minutes on one GPU): configure and build with
# CUDA in its own build directory, run the gpu tests (the CUDA ones run here, they skip elsewhere), then time
# prefill and decode on the cuda backend against the cpu backend with `dualpath bench compute`.
#
#   scripts/gpu-check.sh            # BUILD_DIR (default build-cuda), JOBS (default nproc), MODEL (default small)
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-cuda}
jobs=${JOBS:-$(nproc)}
model=${MODEL:-small}
start=$(date +%s)
step() { echo "== [$(( $(date +%s) - start ))s] $*"; }

step "device"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
else
  echo "nvidia-smi not found; continuing (the tests report whether CUDA sees a device)"
fi

step "configure ($build, CUDA on)"
timeout 180 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDUALPATH_CUDA=ON >/dev/null

step "build test_gpu"
timeout 240 cmake --build "$build" --target test_gpu -j"$jobs" 2>&1 | tail -3

step "gpu tests"
timeout 120 "$build/tests/gpu/test_gpu" --force-colors=0

step "build dualpath (for the timing)"
if ! timeout 240 cmake --build "$build" --target dualpath -j"$jobs" 2>&1 | tail -3; then
  echo "dualpath did not build; the timing is skipped" >&2
  exit 1
fi

for backend in cuda cpu; do
  step "bench compute --backend $backend --model $model"
  timeout 120 "$build/apps/dualpath" bench compute --backend "$backend" --model "$model" --context 4096 \
    --append 512 --decode-batch 8 --repeats 3 --json
done
step "done"
