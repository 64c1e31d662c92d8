#!/usr/bin/env bash
# Checks that every version the image depends on is pinned to one release, in one place:
#  * env/versions.env: each *_VERSION is one exact version (no range, wildcard or "latest"; three
#    parts, or two where the package's releases have two: CUDA's), each base image names a tag;
#  * env/*.yml (the conda files): each dependency, conda (name=version) or pip (name==version), is
#    pinned the same way and equals versions.env's <NAME>_VERSION (pytorch-cuda: CUDATOOLKIT_VERSION);
#  * env/lock/image.lock, where the publish workflow has committed one: digests and sha256 in form.
# Debian's packages (the NATIVE_* lists) are not pinned: they follow the stable release's archive.
#
#   tests/static/pins_check.sh [REPO]
#
# Exit codes: 0 all pinned, 1 a line is not (each printed with its file and line), 66 a file is
# missing.
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
versions=$root/env/versions.env
[ -f "$versions" ] || { echo "pins_check.sh: $versions does not exist" >&2; exit 66; }

failures=0
fail() {
  echo "pins_check.sh: $*" >&2
  failures=$((failures + 1))
}

# An exact version: digits, dots, and an optional local or post part (4.7.0.72, 1.13.0+cu116).
exact='^[0-9]+(\.[0-9]+)+([+._-][0-9A-Za-z]+)*$'
# Packages whose releases have two parts (pytorch-cuda 11.6, 11.7): "=11.6" is one release there.
two_part='^(pytorch-cuda|CUDATOOLKIT_VERSION|CUDA_CHROOT_SUITE)$'
# versions.env's values by name, read once (no process per lookup: the check stays fast).
declare -A pin=()

check_version() { # WHERE NAME VALUE
  local where=$1 name=$2 value=$3 parts
  if [ -z "$value" ]; then
    fail "$where: $name has no version"
  elif ! [[ "$value" =~ $exact ]]; then
    fail "$where: $name=$value is not one exact version (expected e.g. 1.23.5, no range or wildcard)"
  else
    parts=${value//[^.]/}
    if [ "${#parts}" -lt 2 ] && ! [[ "$name" =~ $two_part ]]; then
      fail "$where: $name=$value names a release series, not a release (expected three parts, e.g. $value.0)"
    fi
  fi
}

# --- versions.env ---
lineno=0
while IFS= read -r line || [ -n "$line" ]; do
  lineno=$((lineno + 1))
  [[ "$line" =~ ^([A-Z0-9_]+)=\"?([^\"]*)\"?$ ]] || continue
  name=${BASH_REMATCH[1]}
  value=${BASH_REMATCH[2]}
  pin[$name]=$value
  case "$name" in
    *_VERSION) check_version "env/versions.env:$lineno" "$name" "$value" ;;
    *_IMAGE)
      tag=${value##*:}
      if [ "$tag" = "$value" ] || [ "$tag" = latest ] || [ -z "$tag" ]; then
        fail "env/versions.env:$lineno: $name=$value has no fixed tag (expected name:tag, not latest)"
      fi
      ;;
  esac
done <"$versions"

# --- the conda files ---
checked=0
for yml in "$root"/env/*.yml; do
  [ -f "$yml" ] || continue
  rel=${yml#"$root"/}
  lineno=0
  in_deps=0
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    [[ "$line" =~ ^dependencies: ]] && { in_deps=1; continue; }
    [[ "$line" =~ ^[a-z] ]] && in_deps=0
    [ "$in_deps" -eq 1 ] || continue
    [[ "$line" =~ ^[[:space:]]*-[[:space:]]+([^#]*[^#[:space:]]) ]] || continue
    spec=${BASH_REMATCH[1]}
    [ "$spec" = "pip:" ] && continue
    checked=$((checked + 1))
    if [[ "$spec" =~ ^([A-Za-z0-9_.-]+)(==|=)([^=<>!~*,|[:space:]]*)$ ]]; then
      package=${BASH_REMATCH[1]}
      version=${BASH_REMATCH[3]}
    else
      fail "$rel:$lineno: '$spec' is not pinned (expected name=version, or name==version under pip:)"
      continue
    fi
    check_version "$rel:$lineno" "$package" "$version"
    case "$package" in
      pytorch-cuda) var=CUDATOOLKIT_VERSION ;;
      *) var=${package^^} && var=${var//[-.]/_}_VERSION ;;
    esac
    want=${pin[$var]:-}
    if [ -z "$want" ]; then
      fail "$rel:$lineno: $package=$version, but env/versions.env has no $var (every pin lives there)"
    elif [ "$want" != "$version" ]; then
      fail "$rel:$lineno: $package=$version, but env/versions.env has $var=$want"
    fi
  done <"$yml"
done
[ "$checked" -gt 0 ] || fail "env/*.yml: no dependencies found"

# --- the lock, where one is committed ---
lock=$root/env/lock/image.lock
if [ -f "$lock" ]; then
  for key in BASE_IMAGE_DIGEST RUNTIME_BASE_IMAGE_DIGEST; do
    grep -Eq "^$key=sha256:[0-9a-f]{64}\$" "$lock" || fail "env/lock/image.lock: no $key=sha256:<64 hex digits>"
  done
  grep -Eq '^LIBTORCH_SHA256=[0-9a-f]{64}$' "$lock" || fail "env/lock/image.lock: no LIBTORCH_SHA256=<64 hex digits>"
  lock_note="and env/lock/image.lock"
else
  lock_note="(no env/lock/ yet: the publish workflow resolves it where the network is)"
fi

if [ "$failures" -gt 0 ]; then
  echo "pins_check.sh: $failures unpinned or differing line(s); env/versions.env is the one place for versions" >&2
  exit 1
fi
echo "pins_check.sh: env/versions.env and $checked conda/pip pins in env/*.yml are exact and agree $lock_note"
