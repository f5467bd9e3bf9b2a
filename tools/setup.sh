#!/usr/bin/env bash
# Installs what pipesim needs from Debian's packages (only what is missing) and builds it.
# Usage: tools/setup.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake make g++ libboost-dev libeigen3-dev libgtest-dev libgmock-dev libbenchmark-dev
          libcli11-dev libfmt-dev nlohmann-json3-dev)
tools/install_packages.sh "${packages[@]}"

build="${1:-build}"; shift || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
