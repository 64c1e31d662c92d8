#!/usr/bin/env bash
# Prepares the CUDA build test's chroot (tests/cuda_build): Debian trixie (minbase, debootstrap)
# with Debian's CUDA LibTorch (libtorch-cuda-dev 2.6, CUDA 12.4, from contrib and non-free), the
# CUDA toolkit (LibTorch's CMake files want nvcc), the compiler and the trainer's libraries from
# env/versions.env. Debian has no cuDNN (nvidia-cudnn is an installer that downloads it, declined
# here), so a stub libcudnn.so.9 is generated from the cudnn* symbols LibTorch leaves undefined:
# every function in it aborts with a message. It lets the CUDA build link and run on a machine
# without a GPU, where cuDNN is never called; it is test scaffolding, kept in the chroot's
# /opt/dl-test-stubs, and never goes into the image.
#
#   env/cuda-chroot.sh [CACHE_DIR]      (default: /var/cache/dl-tools/cuda-chroot)
#
# CACHE_DIR/root is the chroot. It is reused while its recipe is unchanged and made again when it
# changed: the recipe is the suite, the package lists in versions.env and this script's lines
# between "recipe:" and "end of recipe" (what shapes the chroot), hashed into CACHE_DIR/root/.dl-recipe.
# A new one is made in CACHE_DIR/root.tmp and renamed into place when complete, so a run killed
# midway leaves no half-made chroot behind. Cold: ~2.5 GB downloaded, ~8 GB on disk, minutes.
# Needs root and, only while making the chroot, Debian's archive (the one this machine's apt uses,
# or $DL_CUDA_CHROOT_MIRROR).
#
# Exit status: 0 the chroot is ready (its path is the last line of output); 77 it could not be
# made because the archive is unreachable; 69 not root, or debootstrap missing; 1 any other failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${1:-/var/cache/dl-tools/cuda-chroot}
root=$cache/root
tmp=$cache/root.tmp
stub_dir=/opt/dl-test-stubs
say() { echo "cuda-chroot: $*"; }
die() {
  echo "cuda-chroot: $2" >&2
  exit "$1"
}

[ "$(id -u)" -eq 0 ] || die 69 "needs root (debootstrap and chroot)"
command -v debootstrap >/dev/null 2>&1 ||
  die 69 "debootstrap is not installed (env/install-native.sh installs it)"

suite=$CUDA_CHROOT_SUITE
# shellcheck disable=SC2206
packages=($CUDA_CHROOT_PACKAGES $CUDA_CHROOT_BUILD_PACKAGES $CUDA_CHROOT_TEST_PACKAGES
  $NATIVE_LIB_PACKAGES)
recipe=$({
  sed -n '/^# --- recipe:/,/^# --- end of recipe/p' "${BASH_SOURCE[0]}"
  echo "$suite ${packages[*]}"
} | sha256sum | cut -d' ' -f1)

mkdir -p "$cache"
# One run at a time per cache (two test trees may share it).
exec 9>"$cache/.lock"
flock 9

if [ -f "$root/.dl-recipe" ] && [ "$(cat "$root/.dl-recipe")" = "$recipe" ]; then
  say "reusing $root (recipe ${recipe:0:12})"
  echo "$root"
  exit 0
fi

# Unmounts whatever is mounted under a folder (deepest first), so that it can be removed safely.
unmount_under() {
  local dir
  dir=$(realpath -m "$1")
  awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" || true; done
}
trap 'unmount_under "$tmp"' EXIT

# The archive this machine already uses (CI may reach only that one), else Debian's default.
mirror=${DL_CUDA_CHROOT_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
    grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi
mirror=${mirror%/}
reachable() { wget -q -T 30 -t 2 -O /dev/null "$mirror/dists/$suite/InRelease"; }
reachable || die 77 "cannot reach $mirror/dists/$suite (no network?): the chroot cannot be made"

started=$SECONDS
logs=$cache/logs
mkdir -p "$logs"
# What a killed run left: a half-made chroot, or the old one it was replacing.
for leftover in "$tmp" "$cache/root.old"; do
  unmount_under "$leftover"
  rm -rf "$leftover"
done
# fail STEP LOG: says where it failed; 77 when the archive went away meanwhile.
fail() {
  tail -20 "$2" >&2
  reachable || die 77 "$1: $mirror became unreachable (log: $2)"
  die 1 "$1 failed (log: $2)"
}

# --- recipe: the commands that shape the chroot (their text is hashed) ---
say "debootstrap $suite minbase from $mirror into $tmp"
debootstrap --variant=minbase --components=main,contrib,non-free "$suite" "$tmp" "$mirror" \
  >"$logs/debootstrap.log" 2>&1 || fail debootstrap "$logs/debootstrap.log"
say "[$((SECONDS - started)) s] debootstrap done"
unmount_under "$tmp" # debootstrap may leave its /proc mounted

cat >"$tmp/etc/apt/sources.list" <<EOF
deb $mirror $suite main contrib non-free non-free-firmware
EOF
mount -t proc proc "$tmp/proc"
in_root() { chroot "$tmp" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }
# nvidia-cudnn downloads cuDNN from NVIDIA, which fails offline and leaves libtorch-cuda
# unconfigured; declining its licence makes it install nothing.
echo "nvidia-cudnn nvidia-cudnn/question select I Decline" | in_root debconf-set-selections
say "installing ${#packages[@]} packages: ${packages[*]}"
{ in_root apt-get update -q && in_root apt-get install -y -q --no-install-recommends "${packages[@]}"; } \
  >"$logs/apt.log" 2>&1 || fail "apt-get install" "$logs/apt.log"
in_root apt-get clean
say "[$((SECONDS - started)) s] packages installed"

# The cuDNN stub: one function per cudnn* symbol that LibTorch's libraries leave undefined, each
# aborting with its name; with the symbol versions they ask for, when they ask for any.
libdir=/usr/lib/x86_64-linux-gnu
mkdir -p "$tmp$stub_dir"
needers=$(cd "$tmp$libdir" && for f in libtorch*.so.*.*.* libc10*.so.*.*.*; do
  # grep reads to the end (no -q): objdump killed by SIGPIPE would fail the pipe (pipefail).
  if [ -f "$f" ] && objdump -p "$f" | grep 'NEEDED *libcudnn\.so\.9' >/dev/null; then echo "$f"; fi
done)
[ -n "$needers" ] || die 1 "no library in $tmp$libdir needs libcudnn.so.9: is libtorch-cuda-dev installed?"
symbols=$(cd "$tmp$libdir" && for f in $needers; do
  readelf --dyn-syms -W "$f" | awk '$7 == "UND" && $8 ~ /^cudnn/ {print $8}'
done | sort -u)
[ -n "$symbols" ] || die 1 "no undefined cudnn* symbol in $needers"
{
  echo "// Generated by env/cuda-chroot.sh: a stand-in for cuDNN 9 on a machine without a GPU."
  echo "#include <stdio.h>"
  echo "#include <stdlib.h>"
  echo "static void dl_stub_called(const char* name) {"
  echo "  fprintf(stderr, \"libcudnn.so.9 stub: %s called; this stub (dl-tools' CUDA build test) \""
  echo "                  \"has no cuDNN in it\\n\", name);"
  echo "  abort();"
  echo "}"
  for s in $symbols; do
    name=${s%%@*}
    echo "int $name(void) { dl_stub_called(\"$name\"); return 1; }"
  done
} >"$tmp$stub_dir/cudnn_stub.c"
versions=$(printf '%s\n' $symbols | sed -n 's/^[^@]*@@\{0,1\}\([^ (]*\).*/\1/p' | sort -u)
link_flags=(-shared -fPIC -Wl,-soname,libcudnn.so.9)
if [ -n "$versions" ]; then
  for v in $versions; do echo "$v { global: *; };"; done >"$tmp$stub_dir/cudnn_stub.map"
  link_flags+=("-Wl,--version-script=$stub_dir/cudnn_stub.map")
fi
in_root gcc -O1 "${link_flags[@]}" -o "$stub_dir/libcudnn.so.9" "$stub_dir/cudnn_stub.c" \
  >"$logs/stub.log" 2>&1 || fail "building the cuDNN stub" "$logs/stub.log"
say "cuDNN stub: $(wc -w <<<"$symbols") functions${versions:+, versions $(echo $versions)}, from $(echo $needers)"
missing=$(in_root env LD_LIBRARY_PATH=$stub_dir ldd "$libdir/libtorch_cuda.so" | grep 'not found' || true)
[ -z "$missing" ] || die 1 "libtorch_cuda.so still misses libraries with the stub: $missing"
# --- end of recipe ---

unmount_under "$tmp"
echo "$recipe" >"$tmp/.dl-recipe"
if [ -d "$root" ]; then
  unmount_under "$root"
  mv "$root" "$cache/root.old"
  rm -rf "$cache/root.old"
fi
mv "$tmp" "$root"
say "[$((SECONDS - started)) s] made $root ($(du -sh "$root" | cut -f1), recipe ${recipe:0:12})"
echo "$root"
