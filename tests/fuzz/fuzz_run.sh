#!/usr/bin/env bash
# Builds the libFuzzer harnesses (the "fuzz" preset: clang, ASan, UBSan) and runs each for a while
# on a copy of its seed corpus (tests/fuzz/corpus/<harness>/, so the checkout stays clean). Prints
# one row per harness (executions, seconds, result) and, for every crash, leak, timeout or
# out-of-memory, the saved input and the one command that reproduces it. docs/fuzzing.md says more.
#
#   tests/fuzz/fuzz_run.sh [--seconds N] [HARNESS...]     (default: 15 s each, every harness)
#
# The build lives in one place outside the checkout (DL_FUZZ_CACHE, default
# /var/cache/dl-tools/fuzz-build; flock'ed, so concurrent runs take turns), built from a copy of the
# source kept there, with its own ccache: every clone and CI's fresh one starts warm. A finding's
# input is kept under $DL_FUZZ_CACHE/findings/. Exit codes: 0 no finding, 1 a finding, 2 the build
# failed, 77 skipped (no clang or no libFuzzer: the reason is printed), 64 bad arguments.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${DL_FUZZ_CACHE:-/var/cache/dl-tools/fuzz-build}
seconds=15
harnesses=()
all_harnesses=(idx cifar csv_manifest json settings jpeg_region checkpoint state_pickle zip_scan
  tar_listing image_header shard_list aws_config hostlist checkpoint_note metrics_csv probe_output)

while [ $# -gt 0 ]; do
  case "$1" in
    --seconds)
      [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz_run.sh: --seconds needs a whole number > 0" >&2; exit 64; }
      seconds=$2
      shift 2
      ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *)
      [[ " ${all_harnesses[*]} " == *" $1 "* ]] ||
        { echo "fuzz_run.sh: unknown harness '$1' (expected one of: ${all_harnesses[*]})" >&2; exit 64; }
      harnesses+=("$1")
      shift
      ;;
  esac
done

skip() {
  echo "SKIPPED: $*"
  exit 77
}
command -v clang++ >/dev/null 2>&1 ||
  skip "clang++ not found (apt-get install clang libclang-rt-dev; env/install-native.sh installs them)"
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n' \
  >"$probe_dir/probe.cpp"
clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cpp" -o "$probe_dir/probe" \
  >"$probe_dir/log" 2>&1 ||
  skip "clang++ cannot link -fsanitize=fuzzer: libFuzzer is missing (apt-get install libclang-rt-dev; env/install-native.sh installs it): $(grep -m1 -i error "$probe_dir/log" || true)"

mkdir -p "$cache"
exec 9>"$cache/lock"
if ! flock -n 9; then
  echo "fuzz: waiting for another run to release $cache/lock"
  flock 9
fi

build=$cache/build
# The source is built from a copy in a fixed place, $cache/src: the build folder is outside the
# checkout, so its compile commands name the source by absolute path, and a build of each clone in
# place missed ccache every time (0 hits in 360 calls, 2026-12-07: CI's fresh clone rebuilt all).
# shellcheck source=SCRIPTDIR/../support/copy_tree.sh
source "$root/tests/support/copy_tree.sh"
copy_tree "$root" "$cache/src"
# A build folder configured from elsewhere (before the copy existed) is configured afresh.
if [ -f "$build/CMakeCache.txt" ] &&
  ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$cache/src" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
export CCACHE_DIR=$cache/ccache CCACHE_BASEDIR=$cache/src CCACHE_DEPEND=true CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-2G}
started=$SECONDS
log=$cache/build.log
if ! (cd "$cache/src" && cmake --preset fuzz -B "$build" >"$log" 2>&1 &&
  nice -n 10 cmake --build "$build" --target fuzz_harnesses -j "$(nproc)" >>"$log" 2>&1); then
  echo "fuzz: the build failed; the end of $log:" >&2
  tail -25 "$log" >&2
  exit 2
fi
echo "fuzz: built in $((SECONDS - started)) s ($build)"

if [ "${#harnesses[@]}" -eq 0 ]; then
  harnesses=("${all_harnesses[@]}")
fi
work=$(mktemp -d "$cache/run.XXXXXX")
# One table row: harness, executions, seconds, executions per second, crashes, result. libFuzzer
# stops at its first finding, so a harness reports 0 or 1.
# The coverage column is libFuzzer's last "cov:" figure: the instrumented edges the inputs reached.
row() {
  local rate=-
  [[ "$2" =~ ^[0-9]+$ && "$3" -gt 0 ]] && rate=$(($2 / $3))
  printf '| %-15s | %10s | %7s | %7s | %8s | %7s | %s |' "$1" "$2" "$3" "$rate" "$6" "$4" "$5"
}
findings=0
rows=()
repro=()
for h in "${harnesses[@]}"; do
  binary=$build/tests/fuzz/${h}_fuzz
  if [ ! -x "$binary" ]; then
    # Not built here: the checkpoint harness needs LibTorch, the data ones the trainer's data layer.
    rows+=("$(row "$h" - - - "not built (LibTorch or the data layer missing)" -)")
    continue
  fi
  mkdir -p "$work/$h/corpus" "$work/$h/artifacts"
  cp "$root/tests/fuzz/corpus/$h/"* "$work/$h/corpus/"
  run_started=$SECONDS
  rc=0
  # The scratch files the path-taking harnesses write go to the run's folder, removed below.
  # Niced as the build is: the fuzzer takes a whole core for its seconds, and the suite's tests
  # that measure rates ran beside it in CI (a worker sweep read one core short: 2026-12-07).
  (cd "$work/$h" && TMPDIR="$work/$h" nice -n 10 "$binary" -max_total_time="$seconds" -timeout=25 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$h/artifacts/" \
    "$work/$h/corpus" >"$work/$h/log" 2>&1) || rc=$?
  elapsed=$((SECONDS - run_started))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h/log" | tail -1)
  # (none where the first input already failed: no "cov:" line was printed)
  cov=$(grep -oE 'cov: [0-9]+' "$work/$h/log" | tail -1 | cut -d' ' -f2 || true)
  # slow-unit-* inputs (over 10 s, libFuzzer's note) are not findings; -timeout's are.
  artifact=$(find "$work/$h/artifacts" -type f ! -name 'slow-unit-*' | head -1)
  if [ "$rc" -eq 0 ] && [ -z "$artifact" ]; then
    rows+=("$(row "$h" "${execs:-?}" "$elapsed" 0 "no finding" "${cov:-?}")")
    continue
  fi
  findings=$((findings + 1))
  what=$(grep -m1 -E '^(SUMMARY|==[0-9]+==ERROR)|deadly signal|out-of-memory|timeout' "$work/$h/log" || true)
  if [ -n "$artifact" ]; then
    mkdir -p "$cache/findings/$h"
    kept=$cache/findings/$h/$(basename "$artifact")
    cp "$artifact" "$kept"
    repro+=("$h: $what" "  input: $kept" "  reproduce: $binary $kept")
  else
    kept="(no input saved; exit $rc)"
    repro+=("$h: $what (exit $rc, no input saved; the log's end follows)" "$(tail -15 "$work/$h/log")")
  fi
  rows+=("$(row "$h" "${execs:-?}" "$elapsed" 1 "FINDING: $kept" "${cov:-?}")")
done

echo "| harness         | executions | seconds |  exec/s | coverage | crashes | result |"
echo "|-----------------|-----------:|--------:|--------:|---------:|--------:|--------|"
printf '%s\n' "${rows[@]}"
if [ "$findings" -gt 0 ]; then
  echo
  echo "fuzz: $findings harness(es) found a crash, leak, timeout or out-of-memory:"
  printf '%s\n' "${repro[@]}"
  echo "fuzz: the runs' logs are kept in $work"
  exit 1
fi
rm -rf "$work"
echo "fuzz: no findings (${#harnesses[@]} harnesses, $seconds s each)"
