#!/usr/bin/env bash
# The oldest-platform build test: the tree built by the oldest toolchain and libraries the suite can
# reach, the nearest to the image's Ubuntu 20.04, in the Debian bullseye chroot that
# env/oldest-chroot.sh prepares (g++-9, libcurl 7.74, spdlog 1.8/fmt 7, OpenCV 4.5, Boost 1.74,
# nlohmann/json 3.9, libjpeg-turbo 2.0.6 built with the jpeg8 ABI as Ubuntu's), warnings as errors:
#   * everything that needs no LibTorch (core, dl-launch, the data and report layers, dl_loader's
#     module, their tests) is built against the jpeg8 libjpeg-turbo, and the unit tests run there
#     (the JPEG tests compare our decoding with that libjpeg's own, byte for byte);
#   * a private bucket (s3rver behind tests/helpers/s3_auth_proxy.py, which checks each request's
#     signature with botocore, on 127.0.0.1) is read through libcurl 7.74 with the build's own
#     request signing, and the same read without credentials, or with a wrong secret or region,
#     is refused;
#   * every translation unit that includes LibTorch is compiled against LibTorch 1.13's headers
#     (compile, not link: there is no LibTorch for bullseye).
# ccache keeps its cache in CACHE_DIR/ccache, so a run with the chroot present compiles little.
#
#   tests/oldest_build/oldest_build.sh [CACHE_DIR]      (default: /var/cache/dl-tools/oldest-chroot)
#
# Exit codes: 0 passed; 77 skipped because the chroot cannot be made without Debian's archive
# (the reason is printed); anything else failed (not root and a missing debootstrap included).
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${1:-/var/cache/dl-tools/oldest-chroot}
chroot_dir=$cache/root
s3rver_dir=${DL_S3RVER_DIR:-/var/cache/dl-tools/s3rver}
s3rver_version=3.7.1 # as tests/python/remote_test.py
started=$SECONDS
step_started=
step() {
  [ -n "$step_started" ] && echo "oldest-build: [$((SECONDS - step_started)) s] done"
  step_started=$SECONDS
  echo "oldest-build: == $* =="
}
say() { echo "oldest-build:   $*"; }
fail() {
  echo "oldest-build: FAILED: $*" >&2
  exit 1
}

step "chroot (env/oldest-chroot.sh $cache)"
rc=0
"$src/env/oldest-chroot.sh" "$cache" || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "SKIPPED: the bullseye chroot cannot be made: Debian's archive is unreachable"
  exit 77
fi
[ "$rc" -eq 0 ] || fail "env/oldest-chroot.sh ended with exit $rc"

# One test run per cache at a time: the mount points and the build folders are shared.
exec 8>"$cache/.test-lock"
flock 8
# A run killed by ctest's timeout (SIGKILL: its trap never ran) left its mounts behind, and the
# next run would mount over them; under the lock none is in use.
# shellcheck source=SCRIPTDIR/../../env/chroot-lib.sh
source "$src/env/chroot-lib.sh"
unmount_under "$chroot_dir"

# Mounts and the s3rver process, undone on every way out (deepest mount first).
mounts=()
s3rver_pid=
proxy_pid=
work=$(mktemp -d)
cleanup() {
  local i
  [ -z "$s3rver_pid" ] || kill "$s3rver_pid" 2>/dev/null || true
  [ -z "$proxy_pid" ] || kill "$proxy_pid" 2>/dev/null || true
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || true
  done
  rm -rf "$work"
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

# in_chroot COMMAND...: runs in the chroot with a clean environment (the carried CMake first on
# PATH), without the lock's descriptor.
in_chroot() {
  chroot "$chroot_dir" /usr/bin/env -i PATH=/opt/cmake/bin:/usr/local/bin:/usr/bin:/bin HOME=/root \
    LC_ALL=C.UTF-8 CCACHE_DIR=/ccache CCACHE_BASEDIR=/src CCACHE_DEPEND=true \
    CCACHE_MAXSIZE=3G CI=true "$@" 8>&-
}
logs=$chroot_dir/build-logs
rm -rf "$chroot_dir/build" "$logs"
mkdir -p "$logs"
echo "oldest-build: logs in $logs"

version_of() { in_chroot dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo "?"; }
compiler=$(in_chroot g++-9 --version | head -1)
jpeg=$(printf '#include <stdio.h>\n#include <jpeglib.h>\nJPEG_LIB_VERSION LIBJPEG_TURBO_VERSION\n' |
  in_chroot cpp-9 -P -I/opt/jpeg8/include - | tail -1)
say "$compiler; CMake $(in_chroot cmake --version | sed -n '1s/cmake version //p')"
say "libcurl $(in_chroot curl-config --version | cut -d' ' -f2), spdlog $(version_of libspdlog-dev)," \
  "fmt $(version_of libfmt-dev), OpenCV $(version_of libopencv-dev), Boost $(version_of libboost-dev)," \
  "nlohmann/json $(version_of nlohmann-json3-dev)"
say "libjpeg-turbo ${jpeg#* } in /opt/jpeg8, JPEG_LIB_VERSION ${jpeg%% *}"
[ "${jpeg%% *}" = 80 ] || fail "the chroot's libjpeg-turbo is not the jpeg8 ABI (JPEG_LIB_VERSION ${jpeg%% *})"

common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=gcc-9 -DCMAKE_CXX_COMPILER=g++-9
  -DDL_WERROR=ON -DJPEG_INCLUDE_DIR=/opt/jpeg8/include -DJPEG_LIBRARY=/opt/jpeg8/lib/libjpeg.so
  -DDL_TEST_PYTHON=/usr/bin/python3)

step "build without LibTorch (g++-9, the jpeg8 libjpeg-turbo): core, dl-launch, data, report, tests"
in_chroot cmake -S /src -B /build/core "${common[@]}" -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON \
  >"$logs/configure-core.log" 2>&1 ||
  { tail -30 "$logs/configure-core.log" >&2; fail "configure (log: $logs/configure-core.log)"; }
grep -q 'dl::data: libjpeg-turbo found' "$logs/configure-core.log" ||
  fail "the build did not take the jpeg8 libjpeg-turbo for partial decoding (log: $logs/configure-core.log)"
in_chroot ccache --zero-stats >/dev/null
# -k 0: every file that fails is reported, not the first one only.
in_chroot cmake --build /build/core --parallel "$(nproc)" -- -k 0 >"$logs/build-core.log" 2>&1 ||
  { grep -m 30 -E 'error|warning|undefined reference' "$logs/build-core.log" >&2 || tail -30 "$logs/build-core.log" >&2
    fail "build (log: $logs/build-core.log)"; }
say "$(grep -c '^\[[0-9]*/[0-9]*\]' "$logs/build-core.log") build steps; ccache: $(in_chroot ccache --print-stats 2>/dev/null |
  awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ {printf "%s %s ", $1, $2}')"
data_tests=/build/core/tests/unit/data/dl_data_unit_tests
[ -x "$chroot_dir$data_tests" ] || fail "$data_tests was not built"
# grep reads to the end (no -q): ldd killed by SIGPIPE would fail the pipe (pipefail).
in_chroot ldd "$data_tests" | grep 'libjpeg\.so\.8 => /opt/jpeg8/lib/' >/dev/null ||
  fail "$data_tests does not load the jpeg8 libjpeg (/opt/jpeg8/lib/libjpeg.so.8): $(in_chroot ldd "$data_tests" | grep jpeg)"
say "the data layer's tests load $(in_chroot ldd "$data_tests" | grep -o 'libjpeg\.so\.8 => [^ ]*')"

step "unit tests (ctest -L unit)"
ctest_rc=0
in_chroot ctest --test-dir /build/core -L unit --output-on-failure --parallel "$(nproc)" \
  >"$logs/ctest.log" 2>&1 || ctest_rc=$?
grep -E 'tests passed|tests failed|Total Test time' "$logs/ctest.log" | sed 's/^/oldest-build:   /'
for group in JpegEntropy JpegRegion Transform Loader ImageZoo S3Sign; do
  n=$(grep -cE "Test +#[0-9]+: ${group}[A-Za-z]*\." "$logs/ctest.log" || true)
  passed=$(grep -E "Test +#[0-9]+: ${group}[A-Za-z]*\." "$logs/ctest.log" | grep -c ' Passed' || true)
  say "$group*: $passed of $n passed"
  [ "$n" -gt 0 ] || fail "no $group test ran against the jpeg8 libjpeg-turbo (log: $logs/ctest.log)"
done
if [ "$ctest_rc" -ne 0 ]; then
  grep -E '\*\*\*Failed|Exception|\(Failed\)|\(Timeout\)' "$logs/ctest.log" >&2 || true
  fail "ctest (log: $logs/ctest.log)"
fi

step "a private S3 bucket read through libcurl 7.74 (s3rver $s3rver_version on 127.0.0.1)"
fetch=/build/core/tests/remote_fetch
[ -x "$chroot_dir$fetch" ] || fail "$fetch was not built (no libcurl found in the chroot?)"
s3rver=$s3rver_dir/node_modules/.bin/s3rver
if [ ! -x "$s3rver" ]; then
  command -v npm >/dev/null 2>&1 ||
    fail "s3rver is not in $s3rver_dir and npm is missing (env/install-native.sh installs node and npm)"
  npm install --prefix "$s3rver_dir" --no-audit --no-fund --silent "s3rver@$s3rver_version" \
    >"$logs/npm.log" 2>&1 || fail "npm install s3rver@$s3rver_version (log: $logs/npm.log)"
fi
# s3rver checks no signature and no access: tests/helpers/s3_auth_proxy.py in front of it makes
# the bucket private, refusing what botocore (AWS's own SDK) does not find signed by S3RVER/S3RVER.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$s3rver" -d "$work/s3" -a 127.0.0.1 -p "$port" --configure-bucket private --silent \
  >"$logs/s3rver.log" 2>&1 &
s3rver_pid=$!
python3 "$src/tests/helpers/s3_auth_proxy.py" --upstream "http://127.0.0.1:$port" \
  --port-file "$work/proxy-port" --access-key S3RVER --secret-key S3RVER >"$logs/proxy.log" 2>&1 &
proxy_pid=$!
head -c 300000 /dev/urandom >"$work/object.bin"
# Put with this machine's curl (--aws-sigv4) straight to s3rver: the read below is the bullseye
# build's own signing. --retry-connrefused waits for s3rver to listen.
curl -sSf --retry 50 --retry-connrefused --retry-delay 1 --aws-sigv4 "aws:amz:us-east-1:s3" \
  --user S3RVER:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -T "$work/object.bin" \
  "http://127.0.0.1:$port/private/set/object.bin" >"$logs/put.log" 2>&1 ||
  fail "uploading to s3rver (log: $logs/put.log, $logs/s3rver.log)"
for _ in $(seq 300); do
  [ -s "$work/proxy-port" ] || ! kill -0 "$proxy_pid" 2>/dev/null && break
  sleep 0.1 # the proxy writes its port file once it listens
done
[ -s "$work/proxy-port" ] || fail "s3_auth_proxy.py did not start (log: $logs/proxy.log)"
s3=(AWS_ENDPOINT_URL="http://127.0.0.1:$(cat "$work/proxy-port")" AWS_REGION=us-east-1 AWS_MAX_ATTEMPTS=1)
in_chroot "${s3[@]}" AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER "$fetch" \
  s3://private/set/object.bin >"$work/signed.bin" 2>"$logs/signed.log" ||
  { cat "$logs/signed.log" >&2; fail "the signed read of s3://private/set/object.bin"; }
cmp -s "$work/object.bin" "$work/signed.bin" ||
  fail "the signed read of s3://private/set/object.bin returned other bytes ($(stat -c %s "$work/signed.bin") of 300000)"
say "signed read (libcurl $(in_chroot curl-config --version | cut -d' ' -f2)): 300000 bytes, the same as uploaded"
# expect_refused NAME VARIABLES...: the read with those credentials ends with exit 65 and HTTP 403.
expect_refused() {
  local name=$1 rc=0
  shift
  in_chroot "${s3[@]}" "$@" "$fetch" s3://private/set/object.bin >/dev/null 2>"$logs/$name.log" || rc=$?
  [ "$rc" -eq 65 ] && grep -q 'HTTP 403' "$logs/$name.log" ||
    fail "the $name read: exit $rc, expected 65 and HTTP 403: $(cat "$logs/$name.log")"
  say "$name read refused: $(head -1 "$logs/$name.log")"
}
expect_refused anonymous
expect_refused wrong-secret AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=not-the-secret
expect_refused wrong-region AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=eu-west-1

step "LibTorch's translation units compiled against LibTorch 1.13's headers (no link)"
# The same build folder, now with LibTorch: the files built above are up to date, and only the
# translation units that include LibTorch are new, compiled 8 to a batch (DL_UNITY_LIBTORCH: their
# headers parsed once a batch, the cost of a LibTorch file; CMakeLists.txt).
in_chroot cmake -S /src -B /build/core -DCMAKE_DISABLE_FIND_PACKAGE_Torch=OFF -DDL_UNITY_LIBTORCH=ON \
  -DTorch_DIR=/src/tests/oldest_build/torch-compile-only >"$logs/configure-torch.log" 2>&1 ||
  { tail -30 "$logs/configure-torch.log" >&2; fail "configure (log: $logs/configure-torch.log)"; }
grep -q 'LibTorch not found' "$logs/configure-torch.log" &&
  fail "the compile-only LibTorch was not found (log: $logs/configure-torch.log)"
# The translation units whose command names LibTorch's headers: the rest were compiled, linked
# and tested above.
in_chroot ccache --zero-stats >/dev/null
in_chroot python3 /src/tests/oldest_build/compile_only.py /build/core /opt/libtorch-1.13/include \
  "$(nproc)" >"$logs/build-torch.log" 2>&1 ||
  { grep -A 40 FAILED "$logs/build-torch.log" | grep -m 30 -E 'FAILED|error|warning' >&2 || tail -30 "$logs/build-torch.log" >&2
    fail "compiling LibTorch's translation units (log: $logs/build-torch.log)"; }
# Counted in source files: a unity batch compiles several (DL_UNITY_LIBTORCH).
read -r compiles objects < <(sed -n 's/^compile_only: [0-9]* of \([0-9]*\) compiled, \([0-9]*\) source files$/\1 \2/p' \
  "$logs/build-torch.log") || true
[ "${objects:-0}" -ge 50 ] ||
  fail "only ${objects:-0} source files include LibTorch: expected the trainer's (log: $logs/build-torch.log)"
say "ccache: $(in_chroot ccache --print-stats 2>/dev/null |
  awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ {printf "%s %s ", $1, $2}')"
say "$objects source files compiled (in $compiles compiles) with $compiler against LibTorch $(awk '/^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) / {printf "%s%s", sep, $3; sep = "."}' \
  "$chroot_dir/opt/libtorch-1.13/include/torch/csrc/api/include/torch/version.h")"

echo "oldest-build: [$((SECONDS - step_started)) s] done"
echo "oldest-build: passed in $((SECONDS - started)) s"
