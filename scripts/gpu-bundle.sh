#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a GPU machine that has CUDA but none of DualPath's Debian packages
# and no package access: a CUDA build of test_gpu and dualpath, plus every shared library they load beyond
# glibc, libstdc++ and CUDA's own, into gpu-bundle.tar.xz (ignored by git). Carry that file to the machine;
# gpu-check.sh unpacks and uses it instead of building there.
#
#   scripts/gpu-bundle.sh           # BUILD_DIR (default build-cuda), JOBS (default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build-cuda}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDUALPATH_CUDA=ON >/dev/null
cmake --build "$build" --target test_gpu dualpath -j"$jobs" | tail -1

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/gpu-bundle/bin" "$stage/gpu-bundle/lib"
bins=("$build/tests/gpu/test_gpu" "$build/apps/dualpath")
cp "${bins[@]}" "$stage/gpu-bundle/bin/"
# The machine brings its own C and C++ runtimes and CUDA; everything else travels.
ldd "${bins[@]}" | awk '/=> \// {print $1, $3}' | sort -u |
  grep -v -E '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^ ]*|libcuda|libcudart|libcublas[^ ]*)\.so' |
  while read -r name path; do cp -L "$path" "$stage/gpu-bundle/lib/$name"; done
tar -C "$stage" -cJf gpu-bundle.tar.xz gpu-bundle
echo "gpu-bundle.tar.xz: $(du -h gpu-bundle.tar.xz | cut -f1), $(ls "$stage/gpu-bundle/lib" | wc -l) libraries"
