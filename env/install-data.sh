#!/usr/bin/env bash
# Installs the default data set, Fashion-MNIST's four IDX files (.gz), into a directory
# (the image's /opt/dl/data/fashion-mnist, where dl-launch and dl-train look for it), and checks
# them against env/fashion-mnist.checksums. Used by the Dockerfile's runtime stage.
#
#   env/install-data.sh download|debian [DIR]
#
#   download  the published files from $FASHION_MNIST_URL (env/versions.env); checks the
#             published MD5 of each .gz and the SHA-256 of the IDX inside
#   debian    the files of Debian's dataset-fashion-mnist package (unpacked with dpkg-deb, not
#             installed: needs apt lists); checks the SHA-256 of the IDX inside
#
# Exit codes: 64 bad arguments, 65 a checksum differs, 69 a download or package fetch failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

source_kind=${1:-}
dest=${2:-/opt/dl/data/fashion-mnist}
case "$source_kind" in
  download | debian) ;;
  *) echo "install-data.sh: unknown source '${source_kind}' (expected download or debian)" >&2; exit 64 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt's download user (_apt) must be able to write here, or apt warns and downloads as root.
chmod 755 "$work"

if [ "$source_kind" = download ]; then
  while read -r name _ _; do
    if ! curl -fsSL --retry 3 -o "$work/$name" "$FASHION_MNIST_URL/$name"; then
      echo "install-data.sh: could not download $FASHION_MNIST_URL/$name" >&2
      exit 69
    fi
  done < <(grep -v '^#' "$here/fashion-mnist.checksums")
else
  # apt-get download fetches the one package into the current directory without installing it.
  if ! (cd "$work" && apt-get download -q dataset-fashion-mnist >/dev/null); then
    echo "install-data.sh: could not fetch dataset-fashion-mnist (run apt-get update first?)" >&2
    exit 69
  fi
  dpkg-deb -x "$work"/dataset-fashion-mnist_*.deb "$work/deb"
  mv "$work"/deb/usr/share/datasets/fashion-mnist/*.gz "$work/"
fi

while read -r name md5 sha256; do
  if [ "$source_kind" = download ]; then
    got=$(md5sum "$work/$name" | cut -d' ' -f1)
    if [ "$got" != "$md5" ]; then
      echo "install-data.sh: $name: MD5 $got, expected the published $md5" >&2
      exit 65
    fi
  fi
  got=$(gzip -dc "$work/$name" | sha256sum | cut -d' ' -f1)
  if [ "$got" != "$sha256" ]; then
    echo "install-data.sh: $name: content SHA-256 $got, expected $sha256" >&2
    exit 65
  fi
done < <(grep -v '^#' "$here/fashion-mnist.checksums")

mkdir -p "$dest"
while read -r name _ _; do
  install -m 0644 "$work/$name" "$dest/$name"
done < <(grep -v '^#' "$here/fashion-mnist.checksums")
echo "install-data.sh: Fashion-MNIST ($source_kind) checked and installed in $dest"
