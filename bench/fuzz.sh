#!/usr/bin/env bash
# The fuzz harnesses run longer than the test suite's Fuzz.ShortRun (15 s each): every harness, or
# the ones named, for SECONDS each (default 600), one after the other on a copy of its seed corpus.
# Prints the table (harness, executions, seconds, exec/s, coverage, crashes, result) and, for a finding, its
# saved input and the command that reproduces it; bench/RESULTS.md keeps the latest table.
#
#   bench/fuzz.sh [SECONDS] [HARNESS...]      e.g. bench/fuzz.sh 180, bench/fuzz.sh 60 json
#
# The build and exit codes are tests/fuzz/fuzz_run.sh's (docs/fuzzing.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
seconds=600
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi
exec "$here/../tests/fuzz/fuzz_run.sh" --seconds "$seconds" "$@"
