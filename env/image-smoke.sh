#!/usr/bin/env bash
# The image's own smoke test before it is pushed: `dl-launch --version` names the project version
# and `dl-launch --dry-run` prints the machine and the plan, run in the image with docker.
#
#   env/image-smoke.sh IMAGE [VERSION]     (VERSION: expected in --version's output)
#
# Exit codes: 0 passed, 1 a check failed, 64 usage.
set -euo pipefail

image=${1:?usage: env/image-smoke.sh IMAGE [VERSION]}
want=${2:-}
fail() { echo "image-smoke.sh: $image: $*" >&2; exit 1; }

version=$(docker run --rm "$image" dl-launch --version) || fail "dl-launch --version failed"
[ -z "$want" ] || grep -qF "$want" <<<"$version" || fail "dl-launch --version says '$version', expected $want"
plan=$(docker run --rm "$image" dl-launch --dry-run) || fail "dl-launch --dry-run failed: $plan"
for section in machine plan; do
  grep -q "^$section\$" <<<"$plan" || fail "dl-launch --dry-run printed no '$section' section"
done
echo "image-smoke.sh: $image: $version; --dry-run prints the machine and the plan"
