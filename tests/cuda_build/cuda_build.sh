#!/usr/bin/env bash
# The CUDA build test: builds all of dl-launch, dl-train, their tests, the benchmarks and the GPU
# check's program against Debian's CUDA LibTorch (2.6, CUDA 12.4) in the chroot that
# env/cuda-chroot.sh prepares, with warnings as errors, then runs there, on this machine without a
# GPU, what the image's train-cpu service relies on:
#   * the test suite but its slow, image and static tests (ctest -LE 'slow|image|static');
#   * dl-train --device auto trains on the CPU and writes last.pt, and --resume continues from it;
#   * dl-train --device cuda ends at once with one line and exit 69;
#   * dl-launch with DL_DEVICE=cpu (train-cpu's setting) runs dl-train to its 'done:' line.
# The chroot's stub libcudnn.so.9 (test scaffolding, see env/cuda-chroot.sh) is on the library
# path for the link and the runs. ccache keeps its cache in CACHE_DIR/ccache, so a run with the
# chroot present compiles little.
#
#   tests/cuda_build/cuda_build.sh [CACHE_DIR]      (default: /var/cache/dl-tools/cuda-chroot)
#
# Exit codes: 0 passed; 77 skipped because the chroot cannot be made without Debian's archive
# (the reason is printed); anything else failed (not root and a missing debootstrap included).
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${1:-/var/cache/dl-tools/cuda-chroot}
chroot_dir=$cache/root
stub_dir=/opt/dl-test-stubs
started=$SECONDS
step_started=
step() {
  [ -n "$step_started" ] && echo "cuda-build: [$((SECONDS - step_started)) s] done"
  step_started=$SECONDS
  echo "cuda-build: == $* =="
}
fail() {
  echo "cuda-build: FAILED: $*" >&2
  exit 1
}

step "chroot (env/cuda-chroot.sh $cache)"
rc=0
"$src/env/cuda-chroot.sh" "$cache" || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "SKIPPED: the CUDA chroot cannot be made: Debian's archive is unreachable"
  exit 77
fi
[ "$rc" -eq 0 ] || fail "env/cuda-chroot.sh ended with exit $rc"

# One test run per cache at a time: the mount points and the build folder are shared.
exec 8>"$cache/.test-lock"
flock 8
# A run killed by ctest's timeout (SIGKILL: its trap never ran) left its mounts behind, and the
# next run would mount over them; under the lock none is in use.
# shellcheck source=SCRIPTDIR/../../env/chroot-lib.sh
source "$src/env/chroot-lib.sh"
unmount_under "$chroot_dir"

# Mounts, undone on every way out (deepest first).
mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || true
  done
}
trap cleanup EXIT
mount_into() { # mount options..., then the target inside the chroot
  local target=$chroot_dir${*: -1}
  mkdir -p "$target"
  mount "${@:1:$#-1}" "$target"
  mounts+=("$target")
}
mkdir -p "$cache/ccache"
mount_into -t proc proc /proc
mount_into --bind /dev /dev
mount_into --bind "$src" /src
mount -o remount,bind,ro "$chroot_dir/src"
mount_into --bind "$cache/ccache" /ccache

# in_chroot COMMAND...: runs in the chroot with a clean environment, the stub on the library path,
# without the lock's descriptor (a process the suite leaves behind must not hold the lock).
in_chroot() {
  chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root \
    LC_ALL=C.UTF-8 LD_LIBRARY_PATH=$stub_dir CCACHE_DIR=/ccache CCACHE_BASEDIR=/src \
    CCACHE_DEPEND=true CCACHE_MAXSIZE=5G CI=true "$@" 8>&-
}
logs=$chroot_dir/build-logs
rm -rf "$chroot_dir/build" "$logs"
mkdir -p "$logs"
echo "cuda-build: logs in $logs"

step "configure (release preset, warnings as errors, LibTorch's files 8 to a compile)"
# DL_UNITY_LIBTORCH (CMakeLists.txt): a LibTorch file's compile is mostly its headers, parsed
# once a batch of 8 here, where the build is made once.
in_chroot cmake -S /src --preset release -B /build -DDL_WERROR=ON -DDL_UNITY_LIBTORCH=ON \
  >"$logs/configure.log" 2>&1 ||
  { tail -30 "$logs/configure.log" >&2; fail "configure (log: $logs/configure.log)"; }
grep -E 'dl-train:|dl::data:' "$logs/configure.log" | sed 's/^-- /cuda-build:   /'
grep -q 'dl-train: CUDA support compiled in' "$logs/configure.log" ||
  fail "the build did not find LibTorch's CUDA support (log: $logs/configure.log)"
torch_version=$(awk '/^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) / {printf "%s%s", sep, $3; sep = "."}' \
  "$chroot_dir/usr/include/torch/csrc/api/include/torch/version.h")
echo "cuda-build:   LibTorch $torch_version, CUDA $(in_chroot nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"

step "build (all targets)"
in_chroot ccache --zero-stats >/dev/null
# -k 0: every file that fails is reported, not the first one only.
in_chroot cmake --build /build --parallel "$(nproc)" -- -k 0 >"$logs/build.log" 2>&1 ||
  { grep -m 30 -E 'error|warning|undefined reference' "$logs/build.log" >&2 || tail -30 "$logs/build.log" >&2
    fail "build (log: $logs/build.log)"; }
echo "cuda-build:   $(grep -c '^\[[0-9]*/[0-9]*\]' "$logs/build.log") build steps; ccache: $(in_chroot ccache --print-stats 2>/dev/null |
  awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ {printf "%s %s ", $1, $2}')"

step "test suite (ctest -LE 'slow|image|static')"
ctest_rc=0
in_chroot ctest --test-dir /build -LE 'slow|image|static' --output-on-failure --parallel "$(nproc)" \
  >"$logs/ctest.log" 2>&1 || ctest_rc=$?
grep -E 'tests passed|tests failed|Total Test time' "$logs/ctest.log" | sed 's/^/cuda-build:   /'
skipped=$(grep -c '\*\*\*Skipped' "$logs/ctest.log" || true)
echo "cuda-build:   $skipped skipped"
if [ "$ctest_rc" -ne 0 ]; then
  grep -E '\*\*\*Failed|Exception|\(Failed\)|\(Timeout\)' "$logs/ctest.log" >&2 || true
  fail "ctest (log: $logs/ctest.log)"
fi

step "dl-train and dl-launch as the train-cpu service runs them"
work=/build/cuda-build-runs
mkdir -p "$chroot_dir$work/data"
# 1408 synthetic 28x28 images (labels i % 10) and 128 for validation, as MNIST-layout IDX files.
in_chroot perl -e '
  my $d = shift;
  for (["train", 1408], ["t10k", 128]) {
    my ($p, $n) = @$_;
    open my $i, ">", "$d/$p-images-idx3-ubyte" or die; binmode $i;
    print $i pack("N4", 2051, $n, 28, 28), pack("C*", map { ($_ * 37 + ($_ >> 9)) % 256 } 0 .. $n * 784 - 1);
    open my $l, ">", "$d/$p-labels-idx1-ubyte" or die; binmode $l;
    print $l pack("N2", 2049, $n), pack("C*", map { $_ % 10 } 0 .. $n - 1);
  }' "$work/data"
# train NAME ARGS...: dl-train in $work, output in $logs/NAME.log; returns its exit status.
train() {
  local name=$1
  shift
  in_chroot sh -c 'cd "$1" && shift && exec "$@"' sh "$work" /build/trainer/dl-train \
    --data "$work/data" --batch-size 64 --limit-batches 10 --monitor-every 0 "$@" \
    >"$logs/$name.log" 2>&1
}

train auto --device auto --epochs 1 --name auto ||
  { cat "$logs/auto.log" >&2; fail "dl-train --device auto (log: $logs/auto.log)"; }
grep -qE '^\[[0-9:]+\] info model .* on cpu, ' "$logs/auto.log" ||
  { cat "$logs/auto.log" >&2; fail "dl-train --device auto did not say it trains on the CPU"; }
grep -q 'done: validation accuracy' "$logs/auto.log" ||
  { cat "$logs/auto.log" >&2; fail "dl-train --device auto did not end with its 'done:' line"; }
[ -s "$chroot_dir$work/runs/auto/last.pt" ] || fail "dl-train --device auto left no runs/auto/last.pt"
echo "cuda-build:   --device auto: $(grep -m1 -oE 'model .* on cpu' "$logs/auto.log"); runs/auto/last.pt written"

train resume --device auto --epochs 2 --name auto --resume ||
  { cat "$logs/resume.log" >&2; fail "dl-train --resume (log: $logs/resume.log)"; }
grep -q 'resumed from runs/auto/last.pt after epoch 1' "$logs/resume.log" &&
  grep -q 'done: validation accuracy' "$logs/resume.log" ||
  { cat "$logs/resume.log" >&2; fail "dl-train --resume did not resume from runs/auto/last.pt and finish"; }
echo "cuda-build:   --resume: $(grep -m1 -o 'resumed from .*' "$logs/resume.log")"

cuda_rc=0
train cuda --device cuda --epochs 1 --name cuda || cuda_rc=$?
[ "$cuda_rc" -eq 69 ] || { cat "$logs/cuda.log" >&2; fail "dl-train --device cuda: exit $cuda_rc, expected 69"; }
[ "$(wc -l <"$logs/cuda.log")" -eq 1 ] ||
  { cat "$logs/cuda.log" >&2; fail "dl-train --device cuda: expected one line of output"; }
echo "cuda-build:   --device cuda: exit 69: $(cat "$logs/cuda.log")"

launch_rc=0
mkdir -p "$chroot_dir$work/ws"
in_chroot env DL_DEVICE=cpu DL_EPOCHS=1 DL_DATA="$work/data" /build/launcher/dl-launch \
  --workspace "$work/ws" --limit-batches 10 --monitor-every 0 --name launch \
  >"$logs/launch.log" 2>&1 || launch_rc=$?
grep -q 'done: validation accuracy' "$logs/launch.log" ||
  { cat "$logs/launch.log" >&2; fail "dl-launch with DL_DEVICE=cpu: exit $launch_rc, no 'done:' line"; }
echo "cuda-build:   dl-launch with DL_DEVICE=cpu: $(grep -m1 -o 'done: validation accuracy.*' "$logs/launch.log")"

echo "cuda-build: [$((SECONDS - step_started)) s] done"
echo "cuda-build: passed in $((SECONDS - started)) s"
