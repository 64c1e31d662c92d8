#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs the whole test suite.
#
#   env/test.sh [extra ctest arguments, e.g. -L unit or -LE slow]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/env/install-native.sh"
"$root/env/build.sh" release
cd "$root/build/release"
ctest --output-on-failure --parallel "$(nproc)" "$@"
