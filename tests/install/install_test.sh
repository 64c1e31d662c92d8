#!/usr/bin/env bash
# The install as a user types it (Install.AsAUserTypesIt): env/install.sh --user BUILD_DIR into a
# fresh HOME made as useradd makes one (/etc/skel), then a new login shell with nothing of this
# environment (env -i bash -l) finds dl-launch (and dl-train where built) on PATH, `dl-launch
# init` copies the installed template, and python3 imports dl_plan (and dl_loader where built,
# when that Python has torch) from the user site; then env/uninstall.sh --user removes every file
# the install wrote, and nothing else. Nothing is written outside the temporary HOME but the
# build's install_manifest.txt and install.log.
#
#   install_test.sh REPO BUILD_DIR HAVE_DL_TRAIN HAVE_DL_LOADER      (the last two: 1 or 0)
set -euo pipefail
repo=$1 build=$2 have_train=$3 have_loader=$4

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
home=$tmp/home
mkdir -p "$home"
if [ -d /etc/skel ]; then
  cp -a /etc/skel/. "$home/"
fi
# Debian's and Ubuntu's skeleton ~/.profile puts ~/.local/bin on PATH; elsewhere, the line
# env/install.sh tells the user to add.
if ! grep -qs '\.local/bin' "$home/.profile"; then
  echo "note: /etc/skel/.profile does not put ~/.local/bin on PATH: the test adds the line install.sh names"
  # shellcheck disable=SC2016 # written as the user writes it
  echo 'PATH="$HOME/.local/bin:$PATH"' >>"$home/.profile"
fi
mkdir -p "$home/.local/bin"
echo "someone else's" >"$home/.local/bin/other-tool"

fail() {
  echo "FAILED: $*"
  exit 1
}
# A command in an environment of its own: HOME, the user's names, and what else is given.
clean() {
  env -i HOME="$home" USER="$(id -un)" LOGNAME="$(id -un)" TERM=dumb "$@"
}
tools_path="$(dirname "$(command -v cmake)"):/usr/bin:/bin"

echo "== bash env/install.sh --user $build"
out=$(clean PATH="$tools_path" bash "$repo/env/install.sh" --user "$build" 2>&1) ||
  fail "env/install.sh exited $?: $out"
echo "$out"
local_bin=$home/.local/bin
grep -q "^install.sh: installed dl-launch.* in $local_bin, dl_plan" <<<"$out" ||
  fail "the summary does not name $local_bin and dl_plan"
grep -q "^install.sh: to remove them: bash $repo/env/uninstall.sh" <<<"$out" ||
  fail "the summary does not name the uninstall command"
grep -q "^install.sh: $local_bin is not on this shell's PATH yet: a new login shell has it" <<<"$out" ||
  fail "install.sh did not say how ~/.local/bin gets on PATH (this shell's PATH lacks it)"

# CMake writes the manifest without a newline at the end: read as lines, the last one counts.
mapfile -t installed <"$build/install_manifest.txt"
site=$(sed -n 's/^-- Python modules for .*: \(.*\)/\1/p' "$build/install.log")
python=$(sed -n 's/^-- Python modules for \(.*\): .*/\1/p' "$build/install.log")
[[ "$site" == "$home/.local/"* ]] || fail "the Python modules went to '$site', not the user site"
expected=("$local_bin/dl-launch" "$home/.local/share/dl/workspace_template/dl.conf"
          "$site/dl_plan/__init__.py")
[ "$have_train" != 1 ] || expected+=("$local_bin/dl-train")
[ "$have_loader" != 1 ] || expected+=("$site/dl_loader/__init__.py")
for file in "${expected[@]}"; do
  printf '%s\n' "${installed[@]}" | grep -qxF "$file" || fail "$file is not in the install manifest"
done
[ "$have_loader" != 1 ] || ls "$site"/dl_loader/_core*.so >/dev/null || fail "no dl_loader/_core*.so in $site"
for file in "${installed[@]}"; do
  [[ "$file" == "$home/.local/"* ]] || fail "installed outside ~/.local: $file"
  [ -f "$file" ] || fail "listed but absent: $file"
done
echo "the manifest lists ${#installed[@]} files, all present under $home/.local"

echo "== a new login shell: env -i HOME=$home bash -lc ..."
# The interpreter the modules were installed for, by the name a user types where it is the
# first python3 on the login PATH.
py=python3
typed=$(clean bash -lc 'command -v python3' || true)
if [ -z "$typed" ] || [ "$(readlink -f "$typed")" != "$(readlink -f "$python")" ]; then
  echo "note: python3 on the login PATH is '$typed', not $python: the test runs $python"
  py=$python
fi
imports="import dl_plan; print(dl_plan.__file__)"
if [ "$have_loader" = 1 ]; then
  if "$python" -c 'import torch' >/dev/null 2>&1; then
    imports="import dl_plan, dl_loader; print(dl_plan.__file__); print(dl_loader.__file__)"
  else
    echo "note: $python has no torch: dl_loader is checked as installed files, not imported"
  fi
fi
script="set -e; command -v dl-launch; dl-launch --version"
[ "$have_train" != 1 ] || script+="; command -v dl-train; dl-train --version"
script+="; cd \"\$HOME\" && dl-launch init ws | grep -F 'created  dl.conf'"
script+="; cd / && $py -c '$imports'"
login=$(clean bash -lc "$script" 2>&1) || fail "the login shell's commands failed: $login"
echo "$login"
grep -qxF "$local_bin/dl-launch" <<<"$login" || fail "dl-launch is not the installed one"
[ "$have_train" != 1 ] || grep -qxF "$local_bin/dl-train" <<<"$login" ||
  fail "dl-train is not the installed one"
grep -qxF "$site/dl_plan/__init__.py" <<<"$login" || fail "dl_plan was not imported from $site"
[[ "$imports" != *dl_loader* ]] || grep -qxF "$site/dl_loader/__init__.py" <<<"$login" ||
  fail "dl_loader was not imported from $site"

echo "== bash env/uninstall.sh --user (with another dl-launch on PATH, as root's in /usr/local)"
other=$tmp/other-install/bin
mkdir -p "$other"
printf '#!/bin/sh\necho another\n' >"$other/dl-launch"
chmod +x "$other/dl-launch"
out=$(clean PATH="$other:$tools_path" bash "$repo/env/uninstall.sh" --user 2>&1) ||
  fail "env/uninstall.sh exited $?: $out"
echo "$out" | tail -3
grep -qxF "uninstall.sh: dl-launch still runs from $other/dl-launch, another install (not this one's list)" <<<"$out" ||
  fail "the uninstall did not say that another dl-launch still answers"
for file in "${installed[@]}"; do
  [ ! -e "$file" ] || fail "left after the uninstall: $file"
done
grep -q "^uninstall.sh: removed ${#installed[@]} file(s)" <<<"$out" ||
  fail "the uninstall's count is not the manifest's ${#installed[@]} files"
left=$(cd "$home/.local" && find . -type f)
[ "$left" = "./bin/other-tool" ] || fail "files under ~/.local after the uninstall: $left"
for dir in share/dl "${site#"$home/.local/"}/dl_plan" "${site#"$home/.local/"}/dl_loader"; do
  [ ! -e "$home/.local/$dir" ] || fail "a folder left after the uninstall: ~/.local/$dir"
done
echo "every installed file removed; ~/.local/bin/other-tool kept"
