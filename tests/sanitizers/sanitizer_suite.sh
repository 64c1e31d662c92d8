#!/usr/bin/env bash
# The sanitizer runs of the test suite: builds one of CMakePresets.json's sanitizer presets from
# this source tree in a fixed place outside the checkout, then runs its test preset there (the
# presets hold the compiler flags, the sanitizers' settings and which tests run):
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer: every unit and integration test (the
#         python ones included) and the programs they start, but those labelled image, static,
#         cuda-build, oldest-build (shell checks of files and images, and builds with their own
#         flags: no code of ours runs under the sanitizer), fuzz (the fuzz preset's own runs) and sanitizer
#         (these two: a sanitized build does not register them either).
#   asan-core  the same without LibTorch (core, dl-launch, the data layer and their tests): what
#         the suite runs in CI, whose cold build of the LibTorch files under ASan would not fit
#         its time.
#   tsan  ThreadSanitizer: the data layer's tests (label "data": the loader's worker threads and
#         prefetch window, the buffer pool), built without LibTorch, whose uninstrumented OpenMP
#         threads would read as races.
# Any report fails the run: every process, the children that tests start included (whose exit
# status a test may not look at), writes its reports to a file of its own under CACHE_DIR/<preset>/
# logs (log_path), and the first is printed, then one line for each. Suppressions
# (tests/sanitizers/*.supp) say for each entry whose code it is and why it is not ours.
# Each preset has a fixed place, CACHE_DIR/<preset>, shared by every clone, one run at a time
# (flock): src/, a copy of the source tree (files whose bytes changed are copied, the others keep
# their times) and build/. With the paths the same from run to run, ninja rebuilds what changed
# and ccache hits for everything else whichever folder the clone is in (ccache keys on the source
# and build paths, which a build folder outside the clone would otherwise make differ).
#
#   tests/sanitizers/sanitizer_suite.sh asan|asan-core|tsan [CACHE_DIR]   (default /var/cache/dl-tools/sanitizer-build)
#
# Exit codes: 0 passed; 64 bad arguments; anything else failed (the step is named).
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
preset=${1:-}
cache=${2:-/var/cache/dl-tools/sanitizer-build}
case "$preset" in
  asan | asan-core | tsan) ;;
  *)
    echo "sanitizer_suite.sh: expected the preset, asan, asan-core or tsan, then optionally the cache folder" >&2
    exit 64
    ;;
esac
started=$SECONDS
fail() {
  echo "sanitizers: FAILED: $*" >&2
  exit 1
}

work=$cache/$preset
mkdir -p "$work"
exec 8>"$work/.lock"
flock 8

# shellcheck source=SCRIPTDIR/../support/copy_tree.sh
source "$src/tests/support/copy_tree.sh"
step_started=$SECONDS
copy_tree "$src" "$work/src"
src=$work/src
build=$work/build
logs=$work/logs
export CCACHE_BASEDIR=$src CCACHE_DEPEND=true # as env/build.sh
echo "sanitizers: $preset: source copied to $src in $((SECONDS - step_started)) s"

step_started=$SECONDS
cd "$src"
cmake --preset "$preset" -B "$build" >"$work/configure.log" 2>&1 ||
  { tail -30 "$work/configure.log" >&2; fail "configure (log: $work/configure.log)"; }
# asan builds every target (the tests start the programs, the helper child, the GPU check's
# program); tsan only the data layer's test program, the one its test preset runs (the others'
# tests then read NOT_BUILT, without the "data" label). The lock's descriptor stays out of the
# build and the tests: a process left behind must not hold it.
targets=()
[ "$preset" = tsan ] && targets=(--target dl_data_unit_tests)
nice -n 10 cmake --build "$build" --parallel "$(nproc)" "${targets[@]}" 8>&- >"$work/build.log" 2>&1 ||
  { grep -m 30 -E 'error|warning|undefined reference' "$work/build.log" >&2 || tail -30 "$work/build.log" >&2
    fail "build (log: $work/build.log)"; }
echo "sanitizers: $preset build: $((SECONDS - step_started)) s," \
  "$(grep -c '^\[[0-9]*/[0-9]*\]' "$work/build.log" || true) build steps"

rm -rf "$logs"
mkdir -p "$logs"
# The sanitizers' settings and what runs are the test presets' (CMakePresets.json: asan, tsan);
# here each report also goes to a file of its own (log_path), the children's included.
if [ "$preset" != tsan ]; then
  export ASAN_OPTIONS="log_path=$logs/asan" UBSAN_OPTIONS="log_path=$logs/ubsan"
else
  export TSAN_OPTIONS="log_path=$logs/tsan"
fi
step_started=$SECONDS
ctest_rc=0
# The test preset looks for the build where the configure preset would put it, in the copy.
mkdir -p "$src/build"
rm -rf "${src:?}/build/$preset"
ln -s "$build" "$src/build/$preset"
ctest --preset "$preset" --parallel "$(nproc)" 8>&- >"$work/ctest.log" 2>&1 ||
  ctest_rc=$?
echo "sanitizers: $preset tests: $((SECONDS - step_started)) s"
grep -E 'tests passed|tests failed|Total Test time' "$work/ctest.log" | sed 's/^/sanitizers:   /'
echo "sanitizers:   $(grep -c '\*\*\*Skipped' "$work/ctest.log" || true) skipped"

# A report ends with a SUMMARY line; a file without one holds a warning only (ASan's "failed to
# allocate" where a test makes an allocation fail on purpose), listed but not a failure. The
# first report in full, then one line for each (the files stay in $logs until the next run).
while IFS= read -r note; do
  echo "sanitizers: note, not a report: $note: $(head -1 "$note")"
done < <(find "$logs" -type f -exec grep -L '^SUMMARY: ' {} + | sort)
mapfile -t reports < <(find "$logs" -type f -exec grep -l '^SUMMARY: ' {} + | sort)
if [ "${#reports[@]}" -gt 0 ]; then
  echo "sanitizers: ${reports[0]}:" >&2
  head -80 "${reports[0]}" >&2
  for report in "${reports[@]}"; do
    echo "sanitizers: $report: $(grep -m1 '^SUMMARY' "$report" || head -1 "$report")" >&2
  done
  fail "${#reports[@]} sanitizer report(s) in $logs"
fi
if [ "$ctest_rc" -ne 0 ]; then
  grep -E '\*\*\*Failed|\(Failed\)|\(Timeout\)|\(Subprocess aborted\)|Exception' "$work/ctest.log" >&2 || true
  fail "ctest (log: $work/ctest.log)"
fi
echo "sanitizers: $preset passed in $((SECONDS - started)) s"
