#!/usr/bin/env bash
# Configures and builds one of CMakePresets.json's presets into build/<preset> (Ninja, and ccache
# when present): release (the default: both programs, the tests, the benchmarks), asan and tsan
# (AddressSanitizer + UBSan, ThreadSanitizer: docs/sanitizers.md), programs (dl-launch and
# dl-train only), image (the Dockerfile's build stage).
# `cmake --list-presets` lists them. Where CI=true, compiler warnings are errors (the presets'
# DL_WERROR follows CI); elsewhere they are shown.
#
#   env/build.sh [PRESET]
#
# The presets need CMake 3.21 or newer (CMakePresets.json's cmakeMinimumRequired): Debian 12
# (3.25), Ubuntu 22.04 (3.22) and 24.04 have it. An older CMake (Ubuntu 20.04's 3.16) gets a
# one-line error naming the version needed, exit 69; a newer one first on PATH then helps (pip
# install cmake, or env/install-conda.sh micromamba tools, which the Dockerfile uses).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${1:-release}
if [ "$#" -gt 1 ] || [[ "$preset" == -* ]]; then
  echo "build.sh: expected at most one argument, the preset (cmake --list-presets)" >&2
  exit 64
fi

need=$(sed -n 's/.*"cmakeMinimumRequired": *{ *"major": *\([0-9]*\), *"minor": *\([0-9]*\).*/\1.\2/p' \
  "$root/CMakePresets.json")
have=$(cmake --version 2>/dev/null | sed -n '1s/^cmake version \([0-9]*\.[0-9]*\).*/\1/p' || true)
if [ -z "$have" ]; then
  echo "build.sh: cmake not found (env/install-native.sh installs it)" >&2
  exit 69
fi
if [ -n "$need" ] && [ "$(printf '%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "build.sh: CMake $have is too old: CMakePresets.json needs CMake $need or newer" >&2
  exit 69
fi

cd "$root"
# ccache keys on paths relative to the checkout, so clones in other folders (CI's) share its cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
# Depend mode: a miss compiles at once, instead of first running the preprocessor to look the file
# up in preprocessed mode (about 2 s of a LibTorch file's 20, on each file a cold build compiles);
# a hit is a direct-mode hit, as before. The suite's other builds (chroots, sanitizers, fuzzing)
# set it too.
export CCACHE_DEPEND=${CCACHE_DEPEND:-true}
cmake --preset "$preset"
cmake --build --preset "$preset" --parallel "$(nproc)"
