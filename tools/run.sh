#!/usr/bin/env bash
# The main job: set up, build, and check every scenario in scenarios/ (one line each).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh build
exec build/verify/pipesim check scenarios/ "$@"
