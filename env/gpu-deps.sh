#!/usr/bin/env bash
# Prepares the headers and libraries that tests/gpu/gpu_check.sh needs on a CUDA machine that has
# PyTorch and CMake but neither Debian's dev packages nor a network: spdlog and fmt, Boost
# (program_options and the headers), GoogleTest, zlib, nlohmann/json. Run it beforehand on a
# Debian 12 machine with apt (the development machine): it downloads the packages with
# `apt-get download` (no root, nothing installed) and unpacks them with `dpkg -x` into a folder of
# the repository (git-ignored), which travels with the working tree; gpu_check.sh picks it up from
# there.
#
#   env/gpu-deps.sh [DIR]      (default: <repo>/.gpu-deps)
#
# DIR/root is the unpacked tree (usr/include; usr/lib/x86_64-linux-gnu and usr/share/cmake with
# the CMake package files); DIR/env.sh exports CMAKE_PREFIX_PATH, CPATH, LIBRARY_PATH and
# LD_LIBRARY_PATH for it.
# DIR/root.tar.xz is the same tree packed (11 MB where the tree is 170 MB, nearly all Boost
# headers), for carrying to the GPU machine: gpu_check.sh unpacks it when root/ is missing.
# The libraries are Debian 12's (GCC 12, C++11 ABI): on a machine with an older libstdc++, or with
# a PyTorch built for the old C++ ABI, gpu_check.sh says what it can build and what not.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$root/.gpu-deps}

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
  echo "gpu-deps.sh: needs apt-get and dpkg (run it on Debian 12, the development machine)" >&2
  exit 69
fi

# Development packages and the runtime libraries they link to (apt-get download fetches exactly
# the named packages, no dependencies).
packages=(
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libboost-dev libboost1.74-dev
  libboost-program-options-dev libboost-program-options1.74-dev libboost-program-options1.74.0
  libgtest-dev libgmock-dev
  zlib1g-dev zlib1g
  nlohmann-json3-dev
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# (As root, apt notes that its _apt user cannot write to this private directory and downloads
# without its sandbox; that is harmless.)
echo "gpu-deps.sh: downloading ${#packages[@]} packages"
if ! (cd "$work" && apt-get download -q "${packages[@]}"); then
  echo "gpu-deps.sh: apt-get download failed; run 'apt-get update' (as root) and try again" >&2
  exit 69
fi

rm -rf "$dest/root"
mkdir -p "$dest/root"
for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$dest/root"
done

# Absolute symbolic links (usr/lib/.../libz.so -> /lib/.../libz.so.1.2.13) would point into the
# machine's own tree: make them relative, inside the unpacked one.
while IFS= read -r -d '' link; do
  target=$(readlink "$link")
  case "$target" in
    /*)
      ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$dest/root$target")" "$link"
      ;;
  esac
done < <(find "$dest/root" -type l -print0)

rm -rf "$dest/root/usr/share/doc" "$dest/root/usr/share/lintian"
echo "gpu-deps.sh: packing $dest/root.tar.xz"
XZ_OPT=-T0 tar -C "$dest" -cJf "$dest/root.tar.xz" root

cat >"$dest/env.sh" <<'ENV'
# Sourced by tests/gpu/gpu_check.sh: the unpacked Debian packages next to this file.
deps_root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/root
deps_libs="$deps_root/usr/lib/x86_64-linux-gnu:$deps_root/lib/x86_64-linux-gnu"
export CMAKE_PREFIX_PATH="$deps_root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export CPATH="$deps_root/usr/include${CPATH:+:$CPATH}"
export LIBRARY_PATH="$deps_libs${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$deps_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ENV

echo "gpu-deps.sh: unpacked into $dest/root ($(du -sh "$dest/root" | cut -f1)), packed as" \
  "$dest/root.tar.xz ($(du -sh "$dest/root.tar.xz" | cut -f1)); environment: $dest/env.sh"
