#!/usr/bin/env bash
# The GPU check, sized for a short device lease (well under 8 minutes on one GPU): run the gpu tests (the
# CUDA ones run here, they skip elsewhere), then time prefill and decode on the cuda backend at a server's size
# and, beside the cpu backend, at the demo's size with `dualpath bench compute`. With gpu-bundle.tar.xz beside it (scripts/gpu-bundle.sh, for machines
# that have CUDA but not DualPath's packages) it uses those prebuilt binaries; otherwise it configures and
# builds with CUDA in its own build directory.
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

if [[ -f gpu-bundle.tar.xz ]]; then
  step "unpack gpu-bundle.tar.xz"
  dir=$(mktemp -d)
  tar -C "$dir" -xJf gpu-bundle.tar.xz
  test_gpu=$dir/gpu-bundle/bin/test_gpu
  dualpath=$dir/gpu-bundle/bin/dualpath
  export LD_LIBRARY_PATH="$dir/gpu-bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # CUDA's libraries may live elsewhere on the machine (a Python package, say): look for what is missing.
  for lib in $(ldd "$test_gpu" "$dualpath" | awk '/not found/ {print $1}' | sort -u); do
    found=$(find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -1 || true)
    if [[ -n "$found" ]]; then export LD_LIBRARY_PATH="$(dirname "$found"):$LD_LIBRARY_PATH"; fi
  done
  if ldd "$test_gpu" "$dualpath" | grep "not found"; then echo "libraries still missing" >&2; fi
else
  step "configure ($build, CUDA on)"
  timeout 180 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDUALPATH_CUDA=ON >/dev/null
  step "build test_gpu and dualpath"
  timeout 300 cmake --build "$build" --target test_gpu dualpath -j"$jobs" 2>&1 | tail -3
  test_gpu=$build/tests/gpu/test_gpu
  dualpath=$build/apps/dualpath
fi

step "gpu tests"
timeout 150 "$test_gpu" --force-colors=0

step "bench compute --backend cuda --model $model at a server's size (32K context, 2K append, 64 decoding)"
timeout 180 "$dualpath" bench compute --backend cuda --model "$model" --context 32768 --append 2048 \
  --decode-batch 64 --repeats 5 --json

for backend in cuda cpu; do
  step "bench compute --backend $backend --model $model"
  timeout 120 "$dualpath" bench compute --backend "$backend" --model "$model" --context 4096 \
    --append 512 --decode-batch 8 --repeats 3 --json
done
step "done"
