#!/bin/bash
# The publish workflow's scripts, run here as the workflow runs them (tests/deploy/validate.sh
# workflows checks that it calls nothing else):
#  * env/image-tags.sh: the tags (project version; PyTorch-CUDA), lower-cased for the registry,
#    the build arguments pinning the base images by digest and LibTorch by sha256 from the lock;
#    a tag that is not v<project version>, or no committed lock, fails with one line;
#  * env/lock.sh compare: equal to the committed lock passes; a package that resolves differently,
#    or no committed lock, fails; tests/static/pins_check.sh accepts the lock's form;
#  * env/image-smoke.sh: with the fake docker (the image's command runs on the host), the real
#    dl-launch --version and --dry-run pass, and a wrong expected version fails.
# Not run here: the resolution itself (env/lock.sh resolve needs conda's channels and registries).
#
#   tests/deploy/publish_test.sh LAUNCHER_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
launcher_dir=$(cd "${1:?usage: publish_test.sh LAUNCHER_DIR}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "publish_test.sh: FAILED: $*" >&2; exit 1; }
hex() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

# A copy of the repository's env/ and version, and a lock as env/lock.sh writes one.
mkdir -p "$work/repo" "$work/resolved"
cp -r "$repo/env" "$repo/CMakeLists.txt" "$work/repo/"
rm -rf "$work/repo/env/lock"
{
  echo "# fixture"
  echo "BASE_IMAGE_DIGEST=sha256:$(hex base)"
  echo "RUNTIME_BASE_IMAGE_DIGEST=sha256:$(hex runtime)"
  echo "LIBTORCH_SHA256=$(hex libtorch)"
} >"$work/resolved/image.lock"
printf '@EXPLICIT\nhttps://conda.example/linux-64/numpy-1.23.5-py310h0_0.conda#%s\n' "$(hex numpy | cut -c1-32)" \
  >"$work/resolved/conda-linux-64.lock"
printf 'opencv-python==4.7.0.72 --hash=sha256:%s\n' "$(hex wheel)" >"$work/resolved/pip.lock"
version=$(sed -n 's/^project(dl-tools VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[ -n "$version" ] || fail "no project version in CMakeLists.txt"

# --- image-tags.sh ---
tags=$work/repo/env/image-tags.sh
rc=0
bash "$tags" "v$version" ghcr.io/Owner/dl-tools abc123 >"$work/out" 2>"$work/err" || rc=$?
{ [ "$rc" -eq 1 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "no .*image.lock" "$work/err"; } ||
  fail "image-tags.sh without a lock: expected exit 1 and one line, got $rc: $(cat "$work/err")"
cp -r "$work/resolved" "$work/repo/env/lock"
bash "$tags" "v$version" ghcr.io/Owner/dl-tools abc123 >"$work/out" || fail "image-tags.sh exited $?"
for want in "version=$version" "ghcr.io/owner/dl-tools:$version" "ghcr.io/owner/dl-tools:1.13.0-cu116" \
  "org.opencontainers.image.revision=abc123" \
  "BASE_IMAGE=nvidia/cuda:11.6.2-cudnn8-devel-ubuntu20.04@sha256:$(hex base)" \
  "RUNTIME_BASE_IMAGE=nvidia/cuda:11.6.2-cudnn8-runtime-ubuntu20.04@sha256:$(hex runtime)" \
  "LIBTORCH_SHA256=$(hex libtorch)"; do
  grep -qxF "$want" "$work/out" || fail "image-tags.sh: no line '$want' in: $(cat "$work/out")"
done
echo "image-tags.sh: tags $(sed -n '/^tags<</,/^END/p' "$work/out" | grep : | tr '\n' ' ')"
rc=0
bash "$tags" v9.9.9 ghcr.io/owner/dl-tools 2>"$work/err" >/dev/null || rc=$?
{ [ "$rc" -eq 1 ] && grep -q "does not match the project version" "$work/err"; } || fail "image-tags.sh v9.9.9: exit $rc"

# --- lock.sh compare, and the lock's form ---
lock=$work/repo/env/lock.sh
bash "$lock" compare "$work/resolved" >/dev/null || fail "lock.sh compare: the same lock differs"
bash "$repo/tests/static/pins_check.sh" "$work/repo" >/dev/null || fail "pins_check.sh rejects a well-formed lock"
cp -r "$work/resolved" "$work/drift"
sed -i 's/numpy-1.23.5/numpy-1.23.4/' "$work/drift/conda-linux-64.lock"
rc=0
bash "$lock" compare "$work/drift" >"$work/out" 2>&1 || rc=$?
{ [ "$rc" -eq 1 ] && grep -q "would resolve differently" "$work/out"; } || fail "lock.sh compare did not catch a drifted package (exit $rc)"
rc=0
bash "$lock" compare "$work/resolved" "$work/none" 2>/dev/null || rc=$?
[ "$rc" -eq 1 ] || fail "lock.sh compare without a committed lock: exit $rc, expected 1"
sed -i 's/^LIBTORCH_SHA256=.*/LIBTORCH_SHA256=/' "$work/repo/env/lock/image.lock"
rc=0
bash "$repo/tests/static/pins_check.sh" "$work/repo" 2>/dev/null || rc=$?
[ "$rc" -eq 1 ] || fail "pins_check.sh accepts a lock without the LibTorch sha256"
echo "lock.sh compare: equal passes; a drifted package and a missing lock fail; pins_check reads the lock's form"

# --- image-smoke.sh, with the fake docker running the real dl-launch ---
export FAKE_DOCKER_STATE=$work/engine FAKE_DOCKER_PATH=$launcher_dir:/usr/bin:/bin
mkdir -p "$work/bin"
ln -s "$here/fake-docker.sh" "$work/bin/docker"
export PATH=$work/bin:$PATH
docker pull -q dl-tools:smoke >/dev/null
bash "$repo/env/image-smoke.sh" dl-tools:smoke "$version" || fail "image-smoke.sh failed on dl-launch $version"
rc=0
bash "$repo/env/image-smoke.sh" dl-tools:smoke 9.9.9 2>/dev/null || rc=$?
[ "$rc" -eq 1 ] || fail "image-smoke.sh passed with a wrong version (exit $rc)"
echo "publish_test.sh: passed"
