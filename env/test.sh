#!/usr/bin/env bash
# The README's test command: installs what is missing, builds the release preset (env/build.sh;
# where CI=true, compiler warnings are errors), runs the test suite (ctest --preset release), and
# installs the programs and the Python modules (env/install.sh: /usr/local as root, ~/.local
# otherwise), saying where.
# dl-train needs LibTorch: where it was not built, the last line says so and why, and the exit
# status is non-zero even when every test passed, unless --launcher-only accepts a build and a
# test of dl-launch alone.
#
#   env/test.sh [--launcher-only] [extra ctest arguments, e.g. -L unit or -LE slow]
#
# Exit status: ctest's when a test failed; otherwise 70 when dl-train was not built (without
# --launcher-only), else 0. A failing install or build passes its own code on (the install's only
# when every test passed).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
launcher_only=0
ctest_args=()
for arg in "$@"; do
  if [ "$arg" = "--launcher-only" ]; then
    launcher_only=1
  else
    ctest_args+=("$arg")
  fi
done

"$root/env/install-native.sh"
"$root/env/build.sh" release
build=$root/build/release

rc=0
(cd "$root" && ctest --preset release --parallel "$(nproc)" "${ctest_args[@]}") || rc=$?
install_rc=0
"$root/env/install.sh" "$build" || install_rc=$?
[ "$rc" -ne 0 ] || rc=$install_rc

# The build system knows a dl-train target only where LibTorch was found (a file left by an
# earlier build does not count).
if cmake --build "$build" --target dl-train >/dev/null 2>&1 && [ -x "$build/trainer/dl-train" ]; then
  exit "$rc"
fi
cache=$build/CMakeCache.txt
if grep -qE '^DL_BUILD_TRAINER:[A-Z]*=(OFF|FALSE|NO|0)$' "$cache"; then
  why="DL_BUILD_TRAINER is OFF in $build"
elif grep -qE '^CMAKE_DISABLE_FIND_PACKAGE_Torch:[A-Z]*=(ON|TRUE|YES|1)$' "$cache"; then
  why="LibTorch is switched off in $build (CMAKE_DISABLE_FIND_PACKAGE_Torch)"
else
  why="LibTorch was not found (install libtorch-dev, or export CMAKE_PREFIX_PATH=<a LibTorch>)"
fi
if [ "$launcher_only" -eq 1 ]; then
  echo "test.sh: dl-train was not built: $why; only dl-launch was tested, as --launcher-only accepts"
  exit "$rc"
fi
echo "test.sh: FAILED: dl-train was not built: $why; only dl-launch was tested (--launcher-only accepts that)" >&2
[ "$rc" -ne 0 ] || rc=70
exit "$rc"
