#!/usr/bin/env bash
# Installs the LibTorch that dl-train builds against. Used by the Dockerfile's build stage.
#
#   env/install-libtorch.sh url|debian [DIR]
#
#   url     the pinned zip from $LIBTORCH_URL (env/versions.env: 1.13.0, CUDA 11.6, cxx11 ABI),
#           unpacked into DIR (default /opt/libtorch); its sha256 is checked whenever
#           $LIBTORCH_SHA256 is set (environment first, then versions.env, then env/lock/image.lock)
#   debian  the distribution's libtorch-dev (1.13.1, CPU only) through env/install-native.sh;
#           DIR/lib is created empty, so that the image's runtime stage can copy it either way
#
# Exit codes: 64 bad arguments, 65 the sha256 differs, 69 the download failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# A LIBTORCH_SHA256 given by the caller (the Dockerfile's build argument) wins over the file's.
sha256_override=${LIBTORCH_SHA256:-}
# shellcheck source=versions.env
source "$here/versions.env"
LIBTORCH_SHA256=${sha256_override:-$LIBTORCH_SHA256}
# Else the committed lock's (env/lock.sh records it there).
if [ -z "$LIBTORCH_SHA256" ] && [ -f "$here/lock/image.lock" ]; then
  LIBTORCH_SHA256=$(sed -n 's/^LIBTORCH_SHA256=//p' "$here/lock/image.lock")
fi

kind=${1:-}
dest=${2:-/opt/libtorch}
case "$kind" in
  url)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    echo "install-libtorch.sh: downloading LibTorch $LIBTORCH_VERSION from $LIBTORCH_URL"
    if ! curl -fsSL --retry 3 -o "$work/libtorch.zip" "$LIBTORCH_URL"; then
      echo "install-libtorch.sh: could not download $LIBTORCH_URL" >&2
      exit 69
    fi
    if [ -n "$LIBTORCH_SHA256" ]; then
      if ! echo "$LIBTORCH_SHA256  $work/libtorch.zip" | sha256sum --check --quiet; then
        echo "install-libtorch.sh: $LIBTORCH_URL: sha256 $(sha256sum "$work/libtorch.zip" | cut -d' ' -f1), expected $LIBTORCH_SHA256" >&2
        exit 65
      fi
    else
      echo "install-libtorch.sh: LIBTORCH_SHA256 is not set: the download is not checked" >&2
    fi
    # The zip holds one top-level folder, libtorch/.
    unzip -q "$work/libtorch.zip" -d "$work"
    rm -rf "$dest"
    mkdir -p "$(dirname "$dest")"
    mv "$work/libtorch" "$dest"
    ;;
  debian)
    "$here/install-native.sh" --no-test-data --no-image-tools --no-deploy-tools
    mkdir -p "$dest/lib"
    ;;
  *)
    echo "install-libtorch.sh: unknown source '$kind' (expected url or debian)" >&2
    exit 64
    ;;
esac
echo "install-libtorch.sh: LibTorch from $kind ready"
