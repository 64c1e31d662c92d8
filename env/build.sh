#!/usr/bin/env bash
# Configures and builds the project into build/<preset> with Ninja (and ccache when present).
# Plain cmake invocations rather than presets, so that Ubuntu 20.04's CMake 3.16 builds too.
#
#   env/build.sh [release|debug]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kind=${1:-release}
case "$kind" in
  release) build_type=Release ;;
  debug) build_type=Debug ;;
  *) echo "build.sh: unknown build '$kind' (expected release or debug)" >&2; exit 64 ;;
esac

# Warnings fail the build in CI (CI=true), where the compiler is known; elsewhere they are shown.
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S "$root" -B "$root/build/$kind" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DDL_WERROR="$werror"
cmake --build "$root/build/$kind" --parallel "$(nproc)"
