#!/usr/bin/env bash
# The whole unit and integration suite, dl-train's LibTorch half included, under AddressSanitizer
# + UBSan: installs what is missing (env/install-native.sh), then tests/sanitizers/sanitizer_suite.sh
# asan, which builds the asan preset in its fixed place and runs the suite there. CI's sanitizers
# job runs this beside the test job (the test job's budget holds the half without LibTorch only).
#
#   env/sanitizers.sh [asan|asan-core|tsan]   (default asan)
#
# Exit status: sanitizer_suite.sh's (0 passed; 64 bad arguments; anything else failed).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/env/install-native.sh"
exec bash "$root/tests/sanitizers/sanitizer_suite.sh" "${1:-asan}"
