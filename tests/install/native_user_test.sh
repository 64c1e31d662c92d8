#!/usr/bin/env bash
# env/install-native.sh as a user who is not root and has no sudo (Install.NativeDepsWithoutRoot):
# where every package is present it says so and exits 0 without asking for either (the README's
# commands then build as that user); where one is missing it exits 77 with one line naming the
# package and the apt-get command an administrator runs. The script and versions.env run from a
# copy (the checkout may not be readable by the user), as `nobody` when the test runs as root.
#
#   native_user_test.sh REPO
set -euo pipefail
repo=$1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
fail() {
  echo "FAILED: $*"
  exit 1
}

# A copy of the script and its versions; `extra` is appended to the build's package list.
copy() {
  local dir=$1 extra=$2
  mkdir -p "$dir"
  cp "$repo/env/install-native.sh" "$dir/"
  cp "$repo/env/versions.env" "$dir/"
  [ -z "$extra" ] || echo "NATIVE_BUILD_PACKAGES=\"\$NATIVE_BUILD_PACKAGES $extra\"" >>"$dir/versions.env"
  chmod -R a+rX "$dir"
}
# Runs a command as a user who is not root: nobody where the test is root, else this user.
as_user() {
  if [ "$(id -u)" -eq 0 ]; then
    env HOME="$tmp" setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
  else
    env HOME="$tmp" "$@"
  fi
}

# A PATH with what the script runs, and no sudo.
nosudo=$tmp/bin
mkdir -p "$nosudo"
for tool in bash id dirname dpkg-query apt-get apt-cache grep sed readlink cat; do
  ln -s "$(command -v "$tool")" "$nosudo/$tool"
done

# The demo's install step (its flags) from the copy in DIR, as the user, with no sudo on PATH:
# sets `out` and `rc`.
demo_install() {
  rc=0
  out=$(as_user env PATH="$nosudo" bash "$1/install-native.sh" --no-image-tools \
    --no-deploy-tools 2>&1) || rc=$?
  echo "$out"
}

echo "== every package present: the demo's install step as a user without sudo"
copy "$tmp/present" ""
demo_install "$tmp/present"
if [ "$rc" -eq 77 ] && grep -q "packages are missing" <<<"$out"; then
  echo "SKIPPED: this machine lacks some of the demo's packages (env/install-native.sh as root installs them)"
  exit 77
fi
[ "$rc" -eq 0 ] || fail "exit $rc, expected 0: nothing is missing, so neither root nor sudo is needed"
grep -q "^install-native.sh: all [0-9]* packages present$" <<<"$out" || fail "no line 'all N packages present'"

echo "== one package missing, no sudo"
copy "$tmp/missing" "dl-no-such-package"
demo_install "$tmp/missing"
[ "$rc" -eq 77 ] || fail "exit $rc, expected 77"
[ "$(wc -l <<<"$out")" -eq 1 ] || fail "expected one line"
grep -q "not root and has no sudo: as root, apt-get install .*dl-no-such-package" <<<"$out" ||
  fail "the line does not name the missing package and the apt-get command"
echo "passed"
