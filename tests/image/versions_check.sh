#!/usr/bin/env bash
# Checks that the pinned versions have one source of truth: every default of the Dockerfile's
# global build arguments that env/versions.env also names must equal it there, and the pins of the
# conda env `dl` (env/environment.yml) must equal versions.env's.
#
#   tests/image/versions_check.sh [REPO]      (default: this script's repository)
#
# Exit codes: 0 consistent, 1 a difference (each printed on its own line), 66 a file is missing.
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
versions=$root/env/versions.env
dockerfile=$root/Dockerfile
environment=$root/env/environment.yml
for f in "$versions" "$dockerfile" "$environment"; do
  [ -f "$f" ] || { echo "versions_check.sh: $f does not exist" >&2; exit 66; }
done

# versions.env's value of NAME (its lines are NAME=value or NAME="value").
pinned() { sed -n "s/^$1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$versions"; }

failures=0
fail() {
  echo "versions_check.sh: $*" >&2
  failures=$((failures + 1))
}

# The global arguments: ARG lines before the first FROM.
checked=0
while IFS='=' read -r name value; do
  grep -q "^$name=" "$versions" || continue
  checked=$((checked + 1))
  want=$(pinned "$name")
  [ "$value" = "$want" ] || fail "Dockerfile: ARG $name=$value, but env/versions.env has $name=$want"
done < <(awk '/^FROM /{exit} /^ARG [A-Z0-9_]+=/{sub(/^ARG /, ""); print}' "$dockerfile")
# The versions every image build depends on must be among them.
for name in BASE_IMAGE RUNTIME_BASE_IMAGE PYTHON_VERSION PYTORCH_VERSION TORCHVISION_VERSION \
  TORCHAUDIO_VERSION CUDATOOLKIT_VERSION LIBTORCH_VERSION LIBTORCH_URL LIBTORCH_SHA256 \
  MICROMAMBA_VERSION; do
  grep -q "^ARG $name=" "$dockerfile" || fail "Dockerfile: no global ARG $name (env/versions.env pins it)"
  grep -q "^$name=" "$versions" || fail "env/versions.env: no $name (the Dockerfile has it)"
done

# The conda env's pins: "  - package=version" lines.
for pair in python:PYTHON_VERSION pytorch:PYTORCH_VERSION torchvision:TORCHVISION_VERSION \
  torchaudio:TORCHAUDIO_VERSION pytorch-cuda:CUDATOOLKIT_VERSION; do
  package=${pair%%:*}
  want=$(pinned "${pair#*:}")
  got=$(sed -n "s/^ *- $package=\([^ ]*\) *\$/\1/p" "$environment")
  [ "$got" = "$want" ] || fail "env/environment.yml: $package=${got:-(not pinned)}, but env/versions.env has ${pair#*:}=$want"
done

if [ "$failures" -gt 0 ]; then
  echo "versions_check.sh: $failures difference(s); env/versions.env is the source of truth" >&2
  exit 1
fi
echo "versions_check.sh: $checked Dockerfile arguments and the conda env agree with env/versions.env"
