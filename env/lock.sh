#!/usr/bin/env bash
# Resolves what env/versions.env pins into a lock, env/lock/, so that a rebuild next year installs
# the same bytes: every conda package of the env `dl` as an explicit URL with its md5 (micromamba's
# explicit format), the pip wheel with its sha256, the base images' digests and the LibTorch zip's
# sha256. Run by the publish workflow, where the network is; the Dockerfile's install scripts use
# the lock when it is committed.
#
#   env/lock.sh resolve DIR           resolve into DIR (needs the network, curl, skopeo, python3)
#   env/lock.sh compare DIR [LOCK]    DIR against the committed lock (default env/lock)
#   env/lock.sh check DIR             resolve into DIR, then compare: fails when a rebuild would
#                                     resolve differently from the committed lock, or none is
#
# Exit codes: 0 same, 1 different or no lock committed, 64 bad arguments, 69 a download failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

resolve() {
  local out=$1 work micromamba env
  mkdir -p "$out"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  for tool in curl skopeo python3 sha256sum; do
    command -v "$tool" >/dev/null || { echo "lock.sh: $tool is needed to resolve" >&2; exit 69; }
  done

  # The conda env, created for real: its conda-meta records hold each package's URL and md5.
  micromamba=$work/micromamba
  curl -fsSL --retry 3 -o "$micromamba" \
    "https://github.com/mamba-org/micromamba-releases/releases/download/${MICROMAMBA_VERSION}-0/micromamba-linux-64" ||
    { echo "lock.sh: could not download micromamba $MICROMAMBA_VERSION" >&2; exit 69; }
  chmod 755 "$micromamba"
  env=$work/env
  MAMBA_ROOT_PREFIX=$work/root "$micromamba" create -y -q -p "$env" -f "$here/environment.yml"
  {
    echo "# The env dl of env/environment.yml, resolved by env/lock.sh: micromamba create -n dl -f this"
    echo "@EXPLICIT"
    python3 - "$env/conda-meta" <<'PY'
import json, pathlib, sys
for record in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    meta = json.loads(record.read_text())
    print(f"{meta['url']}#{meta['md5']}")
PY
  } >"$out/conda-linux-64.lock"

  # The pip part: the wheel pip chose, with its sha256 (pip install --require-hashes).
  "$env/bin/pip" download -q --no-deps -d "$work/wheels" "opencv-python==$OPENCV_PYTHON_VERSION"
  {
    echo "# The pip part of env/environment.yml, resolved by env/lock.sh: pip install --require-hashes --no-deps -r this"
    for wheel in "$work"/wheels/*; do
      echo "opencv-python==$OPENCV_PYTHON_VERSION --hash=sha256:$(sha256sum "$wheel" | cut -d' ' -f1)"
    done
  } >"$out/pip.lock"

  # The base images' digests: sha256 of the manifest (list) as the registry serves it.
  local base runtime libtorch
  base=$(skopeo inspect --raw "docker://$BASE_IMAGE" | sha256sum | cut -d' ' -f1)
  runtime=$(skopeo inspect --raw "docker://$RUNTIME_BASE_IMAGE" | sha256sum | cut -d' ' -f1)
  curl -fsSL --retry 3 -o "$work/libtorch.zip" "$LIBTORCH_URL" ||
    { echo "lock.sh: could not download $LIBTORCH_URL" >&2; exit 69; }
  libtorch=$(sha256sum "$work/libtorch.zip" | cut -d' ' -f1)
  cat >"$out/image.lock" <<LOCK
# The image's inputs that a tag cannot pin, resolved by env/lock.sh for env/versions.env's
# BASE_IMAGE=$BASE_IMAGE, RUNTIME_BASE_IMAGE=$RUNTIME_BASE_IMAGE and LIBTORCH_URL.
BASE_IMAGE_DIGEST=sha256:$base
RUNTIME_BASE_IMAGE_DIGEST=sha256:$runtime
LIBTORCH_SHA256=$libtorch
LOCK
  echo "lock.sh: resolved into $out: $(grep -c '^http' "$out/conda-linux-64.lock") conda packages, $(grep -c hash "$out/pip.lock") wheel, 2 image digests, the LibTorch sha256"
}

compare() {
  local resolved=$1 lock=${2:-$here/lock}
  if [ ! -d "$lock" ]; then
    echo "lock.sh: no lock committed at $lock: commit the resolved files ($resolved) as env/lock/" >&2
    exit 1
  fi
  if ! diff -ru "$lock" "$resolved"; then
    echo "lock.sh: a rebuild would resolve differently from the committed lock $lock (diff above): commit $resolved as env/lock/ if the change is wanted" >&2
    exit 1
  fi
  echo "lock.sh: the resolution equals the committed lock $lock"
}

case "${1:-}" in
  resolve) resolve "${2:?lock.sh resolve DIR}" ;;
  compare) compare "${2:?lock.sh compare DIR [LOCK]}" "${3:-}" ;;
  check)
    resolve "${2:?lock.sh check DIR}"
    compare "$2"
    ;;
  *)
    echo "lock.sh: unknown command '${1:-}' (expected resolve DIR, compare DIR [LOCK] or check DIR)" >&2
    exit 64
    ;;
esac
