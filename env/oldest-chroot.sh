#!/usr/bin/env bash
# Prepares the oldest-platform build test's chroot (tests/oldest_build): Debian bullseye (minbase,
# debootstrap), the nearest to the image's Ubuntu 20.04 that Debian's archive has: g++-9, libcurl
# 7.74 (below 7.75, as 20.04's 7.68), spdlog 1.8 with fmt 7, OpenCV 4.5, Boost 1.74, nlohmann/json
# 3.9. Three things the image has and bullseye's packages do not are made here:
#   * CMake 3.22 or newer (the suite's tests need it; bullseye has 3.18, and the image builds with
#     conda's 3.26): this machine's CMake (Debian 12's 3.25) is carried into /opt/cmake with the
#     libraries it links and its own loader (patchelf sets both), so that only CMake runs on them;
#     every compiler and program it starts is the chroot's.
#   * libjpeg-turbo with the jpeg8 ABI (JPEG_LIB_VERSION 80, as Ubuntu's libjpeg-turbo8 on every
#     release): bullseye's own source package (2.0.6, the nearest to 20.04's 2.0.3), fetched with
#     apt-get source and built with -DWITH_JPEG8=1 into /opt/jpeg8. libopencv-dev brings Debian's
#     libjpeg-dev (jpeg62) along, so tests/oldest_build names the jpeg8 one to the build and checks
#     that what it built loads libjpeg.so.8.
#   * LibTorch 1.13's headers, for compiling only: bookworm's libtorch-dev (1.13.1; no LibTorch is
#     built for bullseye) and libgloo-dev, fetched through a private apt configuration (the
#     chroot's own sources stay bullseye's) and unpacked into /opt/libtorch-1.13/include, with
#     cmake_macros.h as LibTorch 1.13.0's download has it (Debian's build adds glog and gflags).
#
#   env/oldest-chroot.sh [CACHE_DIR]      (default: /var/cache/dl-tools/oldest-chroot)
#
# CACHE_DIR/root is the chroot, cached as env/chroot-lib.sh says: made again when its recipe (the
# suite, the package lists in versions.env and this script's lines between "recipe:" and "end of
# recipe") changed. Cold: about 300 MB downloaded, 1.5 GB on disk, a few minutes.
# Needs root and, only while making the chroot, Debian's archive (the one this machine's apt uses,
# or $DL_CHROOT_MIRROR).
#
# Exit status: 0 the chroot is ready (its path is the last line of output); 77 it could not be
# made because the archive is unreachable; 69 not root, or debootstrap missing; 1 any other failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# shellcheck source=chroot-lib.sh
source "$here/chroot-lib.sh"
# The native build's libraries but libjpeg-dev (jpeg62): the jpeg8 one is built below.
# shellcheck disable=SC2206
packages=($OLDEST_CHROOT_BUILD_PACKAGES $NATIVE_REMOTE_PACKAGES $NATIVE_PYTHON_MODULE_PACKAGES)
for p in $NATIVE_LIB_PACKAGES; do
  [ "$p" = libjpeg-dev ] || packages+=("$p")
done
command -v patchelf >/dev/null 2>&1 ||
  { echo "oldest-chroot: patchelf is not installed (env/install-native.sh installs it)" >&2; exit 69; }
host_cmake=$(command -v cmake) || { echo "oldest-chroot: cmake not found" >&2; exit 69; }
cmake_version=$(cmake --version | sed -n '1s/^cmake version //p')
chroot_begin oldest-chroot "${1:-/var/cache/dl-tools/oldest-chroot}" "$OLDEST_CHROOT_SUITE" \
  "${BASH_SOURCE[0]}" "${packages[@]}" "$OLDEST_CHROOT_TORCH_SUITE" "$OLDEST_CHROOT_TORCH_PACKAGES" \
  "cmake $cmake_version"

# --- recipe: the commands that shape the chroot (their text is hashed) ---
chroot_debootstrap main "deb $chroot_mirror $chroot_suite main
deb-src $chroot_mirror $chroot_suite main"
chroot_install "${packages[@]}"

chroot_say "CMake $cmake_version from $host_cmake into /opt/cmake"
bundle=$chroot_tmp/opt/cmake
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/share"
host_bin=$(dirname "$(realpath "$host_cmake")")
cp "$host_bin/cmake" "$host_bin/ctest" "$bundle/bin/"
cp -r "$host_bin/../share/cmake-${cmake_version%.*}" "$bundle/share/"
ldd "$bundle/bin/cmake" "$bundle/bin/ctest" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' |
  sort -u | while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
loader=$(cd "$bundle/lib" && ls ld-linux-*.so.*)
# --force-rpath: DT_RPATH, which (unlike RUNPATH) also serves the libraries' own dependencies.
patchelf --set-interpreter "/opt/cmake/lib/$loader" --force-rpath --set-rpath /opt/cmake/lib \
  "$bundle/bin/cmake" "$bundle/bin/ctest"
in_tmp /opt/cmake/bin/cmake --version | grep -q "^cmake version $cmake_version" ||
  chroot_die 1 "the CMake carried into /opt/cmake does not run there"

chroot_say "libjpeg-turbo from $chroot_suite's source package, jpeg8 ABI, into /opt/jpeg8"
in_tmp sh -ec '
  mkdir -p /opt/src && cd /opt/src
  apt-get source -q libjpeg-turbo
  cd libjpeg-turbo-*/
  CC=gcc-9 /opt/cmake/bin/cmake -G Ninja -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/opt/jpeg8 \
    -DCMAKE_INSTALL_LIBDIR=/opt/jpeg8/lib -DWITH_JPEG8=1 -DENABLE_STATIC=0
  ninja -C build install
  cd /opt/src && rm -rf libjpeg-turbo*' >"$chroot_logs/jpeg8.log" 2>&1 ||
  chroot_fail "building libjpeg-turbo (jpeg8)" "$chroot_logs/jpeg8.log"
jpeg_version=$(printf '#include <stdio.h>\n#include <jpeglib.h>\nJPEG_LIB_VERSION LIBJPEG_TURBO_VERSION\n' |
  in_tmp cpp-9 -P -I/opt/jpeg8/include - | tail -1)
[ "${jpeg_version%% *}" = 80 ] ||
  chroot_die 1 "the libjpeg-turbo built in /opt/jpeg8 says JPEG_LIB_VERSION ${jpeg_version%% *}, expected 80"
chroot_say "[$((SECONDS - chroot_started)) s] libjpeg-turbo ${jpeg_version#* } (JPEG_LIB_VERSION 80) in /opt/jpeg8"

chroot_say "LibTorch headers from $OLDEST_CHROOT_TORCH_SUITE's $OLDEST_CHROOT_TORCH_PACKAGES"
apt_dir=/opt/torch-apt
mkdir -p "$chroot_tmp$apt_dir/lists/partial" "$chroot_tmp$apt_dir/cache/archives/partial" \
  "$chroot_tmp$apt_dir/debs"
echo "deb $chroot_mirror $OLDEST_CHROOT_TORCH_SUITE main" >"$chroot_tmp$apt_dir/sources.list"
private_apt=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
# shellcheck disable=SC2086
{ in_tmp apt-get "${private_apt[@]}" update -q &&
  in_tmp sh -ec 'cd "$1" && shift && apt-get "$@"' sh "$apt_dir/debs" "${private_apt[@]}" \
    download $OLDEST_CHROOT_TORCH_PACKAGES; } >"$chroot_logs/torch-headers.log" 2>&1 ||
  chroot_fail "downloading $OLDEST_CHROOT_TORCH_PACKAGES" "$chroot_logs/torch-headers.log"
in_tmp sh -ec '
  for deb in "$1"/debs/*.deb; do dpkg-deb -x "$deb" "$1/unpacked"; done
  mkdir -p /opt/libtorch-1.13
  mv "$1/unpacked/usr/include" /opt/libtorch-1.13/include
  sed -i -e "s|^#define C10_USE_GLOG\$|/* #undef C10_USE_GLOG */|" \
    -e "s|^#define C10_USE_GFLAGS\$|/* #undef C10_USE_GFLAGS */|" \
    /opt/libtorch-1.13/include/c10/macros/cmake_macros.h
  rm -rf "$1"' sh "$apt_dir" >>"$chroot_logs/torch-headers.log" 2>&1 ||
  chroot_fail "unpacking the LibTorch headers" "$chroot_logs/torch-headers.log"
torch_version=$(awk '/^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) / {printf "%s%s", sep, $3; sep = "."}' \
  "$chroot_tmp/opt/libtorch-1.13/include/torch/csrc/api/include/torch/version.h")
[ "${torch_version%.*}" = 1.13 ] ||
  chroot_die 1 "the LibTorch headers unpacked are version '$torch_version', expected 1.13"
chroot_say "[$((SECONDS - chroot_started)) s] LibTorch $torch_version headers in /opt/libtorch-1.13/include"
# --- end of recipe ---

chroot_commit
