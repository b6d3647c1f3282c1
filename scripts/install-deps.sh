#!/usr/bin/env bash
# Installs the Debian packages DualPath builds against. Idempotent: when everything is
# present it only runs dpkg-query and returns.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache clang-format clang-tidy
  libcaf-dev libfabric-dev libfabric-bin capnproto libcapnp-dev libspdlog-dev libfmt-dev doctest-dev
  liburing-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libxxhash-dev libcpp-httplib-dev libssl-dev libopenblas-dev
  libboost-context-dev
  fio
  python3-matplotlib prometheus-cpp-dev
  chromium  # headless, for the live cluster page's browser test (tests/cluster/ui_test.cpp)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
