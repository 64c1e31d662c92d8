#!/usr/bin/env bash
# What the publish workflow builds on a version tag, in GitHub's step-output format ($GITHUB_OUTPUT):
# the image's tags (the project version, and the pinned PyTorch and CUDA versions, 1.13.0-cu116),
# its OCI labels, and the build arguments that pin the base images by digest and the LibTorch zip
# by sha256 from the committed lock (env/lock/image.lock).
#
#   env/image-tags.sh GIT_TAG IMAGE_NAME [REVISION]     e.g. v0.1.0 ghcr.io/owner/dl-tools
#
# Exit codes: 0 printed, 1 the tag is not v<project version> or no lock is committed, 64 usage.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
# shellcheck source=versions.env
source "$here/versions.env"

[ $# -ge 2 ] || { echo "usage: env/image-tags.sh GIT_TAG IMAGE_NAME [REVISION]" >&2; exit 64; }
git_tag=$1
# Registries take lower-case repository names only (GitHub's owner names may have capitals).
name=$(tr '[:upper:]' '[:lower:]' <<<"$2")
revision=${3:-unknown}

version=$(sed -n 's/^project(dl-tools VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[ "$git_tag" = "v$version" ] ||
  { echo "image-tags.sh: tag $git_tag does not match the project version $version in CMakeLists.txt (expected v$version)" >&2; exit 1; }
lock=$here/lock/image.lock
[ -f "$lock" ] || { echo "image-tags.sh: no $lock: the image is built only from a committed lock (env/lock.sh)" >&2; exit 1; }
locked() { sed -n "s/^$1=//p" "$lock"; }

cuda_tag=cu$(cut -d. -f1,2 <<<"$CUDATOOLKIT_VERSION" | tr -d .)
echo "version=$version"
echo "tags<<END_OF_TAGS"
echo "$name:$version"
echo "$name:$PYTORCH_VERSION-$cuda_tag"
echo "END_OF_TAGS"
echo "labels<<END_OF_LABELS"
echo "org.opencontainers.image.version=$version"
echo "org.opencontainers.image.revision=$revision"
echo "org.opencontainers.image.base.name=$RUNTIME_BASE_IMAGE"
echo "org.opencontainers.image.base.digest=$(locked RUNTIME_BASE_IMAGE_DIGEST)"
echo "END_OF_LABELS"
echo "build-args<<END_OF_ARGS"
echo "BASE_IMAGE=$BASE_IMAGE@$(locked BASE_IMAGE_DIGEST)"
echo "RUNTIME_BASE_IMAGE=$RUNTIME_BASE_IMAGE@$(locked RUNTIME_BASE_IMAGE_DIGEST)"
echo "LIBTORCH_SHA256=$(locked LIBTORCH_SHA256)"
echo "END_OF_ARGS"
