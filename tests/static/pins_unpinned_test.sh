#!/usr/bin/env bash
# Shows that tests/static/pins_check.sh catches an unpinned line: for each way a line can be left
# unpinned (no version, a range, a wildcard, a release series, a pip range, an empty version, a
# mutable image tag), a copy of env/ with that one change must fail the check with exit 1 and a
# message naming the file and line; the unchanged copy must pass.
#
#   tests/static/pins_unpinned_test.sh [REPO]
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
check=$root/tests/static/pins_check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# CASE FILE SED-EXPRESSION EXPECTED-TEXT
expect_caught() {
  local name=$1 file=$2 expr=$3 want=$4 out rc=0
  rm -rf "$work/repo" && mkdir -p "$work/repo" && cp -r "$root/env" "$work/repo/"
  sed -i "$expr" "$work/repo/env/$file"
  if cmp -s "$root/env/$file" "$work/repo/env/$file"; then
    echo "pins_unpinned_test.sh: $name: the edit changed nothing in env/$file (test is stale)" >&2
    failures=$((failures + 1))
    return
  fi
  out=$(bash "$check" "$work/repo" 2>&1) || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qF -- "$want" <<<"$out"; then
    echo "pins_unpinned_test.sh: $name: expected exit 1 and '$want', got exit $rc:" >&2
    echo "$out" >&2
    failures=$((failures + 1))
  else
    echo "caught ($name): $(grep -F -- "$want" <<<"$out" | head -n 1)"
  fi
}

mkdir -p "$work/repo" && cp -r "$root/env" "$work/repo/"
bash "$check" "$work/repo" >/dev/null || { echo "pins_unpinned_test.sh: the unchanged env/ fails the check" >&2; exit 1; }

expect_caught "no version" environment.yml 's/^  - tqdm=.*/  - tqdm/' "environment.yml:"
expect_caught "a range" environment.yml 's/^  - numpy=.*/  - numpy<2/' "'numpy<2' is not pinned"
expect_caught "a wildcard" environment.yml 's/^  - pandas=.*/  - pandas=1.5.*/' "'pandas=1.5.*' is not pinned"
expect_caught "a release series" environment.yml 's/^  - python=.*/  - python=3.10/' "python=3.10 names a release series"
expect_caught "a pip range" environment.yml 's/^      - opencv-python==.*/      - opencv-python<4.12/' "'opencv-python<4.12' is not pinned"
expect_caught "a build tool" build-tools.yml 's/^  - ninja=.*/  - ninja/' "build-tools.yml:"
expect_caught "an empty version" versions.env 's/^LIBTORCH_VERSION=.*/LIBTORCH_VERSION=/' "LIBTORCH_VERSION has no version"
expect_caught "a mutable image tag" versions.env 's/^BASE_IMAGE=.*/BASE_IMAGE=nvidia\/cuda:latest/' "BASE_IMAGE=nvidia/cuda:latest has no fixed tag"
expect_caught "two places disagree" versions.env 's/^SEABORN_VERSION=.*/SEABORN_VERSION=0.12.1/' "seaborn=0.12.2, but env/versions.env has SEABORN_VERSION=0.12.1"

if [ "$failures" -gt 0 ]; then
  echo "pins_unpinned_test.sh: $failures case(s) not caught" >&2
  exit 1
fi
echo "pins_unpinned_test.sh: every unpinned form was caught"
