#!/usr/bin/env bash
# Installs the Debian packages DualPath builds against, and the npm packages of tests/clients from their lock
# file. Idempotent: when everything is
# present it only runs dpkg-query and returns.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ccache clang-format clang-tidy
  libcaf-dev libfabric-dev libfabric-bin capnproto libcapnp-dev libspdlog-dev libfmt-dev doctest-dev
  liburing-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libxxhash-dev libcpp-httplib-dev libssl-dev libopenblas-dev
  libboost-context-dev libpcre2-dev libutf8proc-dev
  fio
  iproute2  # the agent CLI tests bring up loopback in a network namespace of their own
  python3-matplotlib prometheus-cpp-dev
  chromium  # headless, for the live cluster page's browser test (tests/cluster/ui_test.cpp)
)

missing=()
# The test clients (tests/clients) run on Node; an image without it gets Debian's.
command -v npm >/dev/null || missing+=(nodejs npm)
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm packages the tests compare against or drive (tests/clients/package-lock.json), installed once per
# version of the lock file: a stamp in node_modules records the lock it was installed from.
clients="$(dirname "$0")/../tests/clients"
stamp="$clients/node_modules/.installed-from-lock"
if ! cmp -s "$clients/package-lock.json" "$stamp"; then
  # `npm install` from the lock (it installs the locked versions and leaves the lock as it is), not `npm ci`:
  # Qwen Code lists optional per-platform packages that were never published (@teddyzhu/clipboard-darwin-*),
  # which `npm ci` refuses as a lock out of sync. A fresh node_modules, as `npm ci` would make.
  echo "install-deps: npm install in tests/clients (from its lock file)"
  rm -rf "$clients/node_modules"
  locked="$(mktemp)"
  cp "$clients/package-lock.json" "$locked"
  (cd "$clients" && npm install --no-save --no-audit --no-fund --loglevel=error)
  cmp -s "$locked" "$clients/package-lock.json" ||
    { echo "install-deps: npm changed tests/clients/package-lock.json" >&2; rm -f "$locked"; exit 1; }
  rm -f "$locked"
  cp "$clients/package-lock.json" "$stamp"
fi
