#!/usr/bin/env bash
# The image smoke build: builds the repository's Dockerfile without a Docker engine (buildah, vfs
# storage, chroot isolation) on a Debian 12 base image made here with debootstrap, with Debian's
# LibTorch and Fashion-MNIST and no conda (the offline build arguments), then runs the image:
# `dl-launch --version`, `dl-launch --dry-run`, and a short training on the default data.
# Prints the build and runtime stages' sizes and the wall time of each step.
#
#   tests/image/smoke_build.sh [WORK_DIR]     (default: /var/cache/dl-tools/image-smoke)
#
# WORK_DIR keeps the image store, the base image's root file system as a tarball (made once),
# and the logs. Exit codes: 0 passed, 77 skipped (not root, or buildah/debootstrap missing; the
# reason is printed), anything else failed.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=${1:-/var/cache/dl-tools/image-smoke}
suite=bookworm
base_image=localhost/dl-smoke-base:$suite
tag=localhost/dl-smoke

skip() {
  echo "SKIPPED: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, and buildah's chroot isolation)"
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null 2>&1 ||
    skip "$tool is not installed (apt-get install $tool; env/install-native.sh installs it)"
done

mkdir -p "$work"
buildah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
started=$SECONDS
step_started=
step() {
  [ -n "$step_started" ] && echo "smoke: [$((SECONDS - step_started)) s] done"
  step_started=$SECONDS
  echo "smoke: == $* =="
}

# The archive this machine already uses (CI may only reach that one), else Debian's default.
mirror=${DL_SMOKE_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
    grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

step "base image $base_image (debootstrap $suite minbase from $mirror)"
if ! "${buildah[@]}" inspect --type image "$base_image" >/dev/null 2>&1; then
  tarball=$work/$suite-minbase.tar
  if [ ! -f "$tarball" ]; then
    rm -rf "$work/rootfs"
    if ! debootstrap --variant=minbase "$suite" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
      echo "smoke: debootstrap failed (is $mirror reachable?); the end of $work/debootstrap.log:" >&2
      tail -5 "$work/debootstrap.log" >&2
      exit 1
    fi
    # debootstrap's package cache is not part of the image.
    rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb
    tar -C "$work/rootfs" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$work/rootfs"
  fi
  ctr=$("${buildah[@]}" from scratch)
  mnt=$("${buildah[@]}" mount "$ctr")
  tar -C "$mnt" -xf "$tarball"
  "${buildah[@]}" umount "$ctr" >/dev/null
  "${buildah[@]}" commit --quiet --rm "$ctr" "$base_image" >/dev/null
fi

# The offline build arguments: everything from Debian's archive.
build_args=(
  --build-arg "BASE_IMAGE=$base_image"
  --build-arg "RUNTIME_BASE_IMAGE=$base_image"
  --build-arg LIBTORCH_SOURCE=debian
  --build-arg CONDA=none
  --build-arg DATA_SOURCE=debian
)
bud() { # DOCKERFILE, then bud options
  local file=$1
  shift
  "${buildah[@]}" bud --isolation chroot --pull=false --file "$file" "${build_args[@]}" "$@" "$root"
}

# The build stage on its own first, for its size; the runtime stage then takes the programs from
# that image instead of compiling again: its two `COPY --from=build` lines name the image in a
# copy of the Dockerfile (buildah skips the stages the target does not use). Nothing else differs.
# The build stage compiles with the host's compiler and libraries (both Debian 12's, from the same
# archive), so it reads and fills the host's own ccache, bound in: right after the host's build
# (env/test.sh builds first) it compiles almost nothing. CI passes on, so that warnings are errors
# where they are on the host, and the flags (part of ccache's key) match, as the locale's variables
# the host has set (ccache hashes them: they choose the language of the compiler's messages).
cache_args=()
host_ccache=$(ccache --get-config cache_dir 2>/dev/null || true)
if [ -n "$host_ccache" ]; then
  mkdir -p "$host_ccache"
  cache_args=(--volume "$host_ccache:/host-ccache" --build-arg CCACHE_DIR=/host-ccache --build-arg "CI=${CI:-}")
  for name in LANG LC_ALL LC_CTYPE LC_MESSAGES; do
    [ -z "${!name+set}" ] || cache_args+=(--build-arg "$name=${!name}")
  done
fi
ccache_counts() { # hits misses, of the host's cache (other builds may share it meanwhile)
  ccache --print-stats 2>/dev/null | awk -F'\t' '$1 ~ /^(direct|preprocessed)_cache_hit$/ {h += $2}
    $1 == "cache_miss" {m = $2} END {print h + 0, m + 0}'
}
step "build stage (compiles, runs the unit tests; ccache: ${host_ccache:-none on the host})"
read -r hits_before misses_before < <(ccache_counts)
bud "$root/Dockerfile" --target build --tag "$tag:build" "${cache_args[@]}" >"$work/build-stage.log" 2>&1 ||
  { tail -40 "$work/build-stage.log" >&2; echo "smoke: the build stage failed; log: $work/build-stage.log" >&2; exit 1; }
grep -E '^(100% tests passed|[0-9]+% tests passed)' "$work/build-stage.log" | sed 's/^/smoke: build stage: /' || true
read -r hits_after misses_after < <(ccache_counts)
echo "smoke: build stage: the host's ccache: $((hits_after - hits_before)) hits, $((misses_after - misses_before)) misses" \
  "(counted on the host's cache: builds beside this one count too)"

step "runtime stage"
runtime_dockerfile=$work/Dockerfile.runtime
sed "s|^COPY --from=build |COPY --from=$tag:build |" "$root/Dockerfile" >"$runtime_dockerfile"
grep -q "^COPY --from=$tag:build " "$runtime_dockerfile" ||
  { echo "smoke: the Dockerfile has no 'COPY --from=build' line to point at $tag:build" >&2; exit 1; }
bud "$runtime_dockerfile" --target runtime --tag "$tag:runtime" >"$work/runtime-stage.log" 2>&1 ||
  { tail -40 "$work/runtime-stage.log" >&2; echo "smoke: the runtime stage failed; log: $work/runtime-stage.log" >&2; exit 1; }

step "run the image"
ctr=$("${buildah[@]}" from "$tag:runtime")
trap '"${buildah[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
in_image() { "${buildah[@]}" run --isolation chroot "$ctr" -- "$@"; }

echo "smoke: \$ dl-launch --version"
in_image dl-launch --version
echo "smoke: \$ dl-launch --dry-run"
in_image dl-launch --dry-run
echo "smoke: \$ DL_EPOCHS=1 dl-launch --limit-batches 20 --name smoke"
in_image env DL_EPOCHS=1 dl-launch --limit-batches 20 --name smoke 2>&1 | tee "$work/train.log"
grep -q 'done: validation accuracy' "$work/train.log" ||
  { echo "smoke: the training run did not end with its 'done:' line" >&2; exit 1; }

# The host user's case: a workspace owned by someone else (uid 65534 here), all of it, as a host
# user's directory is. dl-launch runs the trainer as that user and writes with their credentials,
# so they must reach /root/workspace and own what it writes (runs/ included: the run above made it
# as root, and root's runs/ would be closed to them).
echo "smoke: \$ chown -R 65534:65534 /root/workspace && DL_EPOCHS=1 dl-launch --limit-batches 5 --name owned"
in_image sh -c 'mkdir -p /root/workspace && chown -R 65534:65534 /root/workspace &&
  DL_EPOCHS=1 dl-launch --limit-batches 5 --monitor-every 0 --name owned &&
  stat -c "%u:%g %n" /root/workspace/runs/owned/last.pt' 2>&1 | tee "$work/owned.log"
grep -q '^65534:65534 /root/workspace/runs/owned/last.pt$' "$work/owned.log" ||
  { echo "smoke: the run on a workspace owned by uid 65534 did not leave a last.pt owned by it" >&2; exit 1; }

step "sizes"
"${buildah[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep "$tag" | sed 's/^/smoke: image /'

# The two stages' images are rebuilt on every run; the base image stays for the next one.
"${buildah[@]}" rm "$ctr" >/dev/null
trap - EXIT
"${buildah[@]}" rmi "$tag:runtime" "$tag:build" >/dev/null
"${buildah[@]}" rmi --prune >/dev/null 2>&1 || true
echo "smoke: [$((SECONDS - step_started)) s] done"
echo "smoke: passed in $((SECONDS - started)) s"
