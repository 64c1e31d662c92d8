#!/usr/bin/env bash
# Installs what a build made with `cmake --install` (the install rules of launcher/, trainer/ and
# cmake/python_install.cmake): dl-launch and dl-train in PREFIX/bin, the workspace template in
# PREFIX/share/dl, and dl_plan and dl_loader where the Python dl_loader is built for finds them
# (/usr/local/lib/python3.X/dist-packages, or the user site: python3 -m site --user-site).
# PREFIX is /usr/local as root, ~/.local otherwise or with --user. The files written are added to
# PREFIX/share/dl/install_manifest.txt, which env/uninstall.sh removes, and the last lines say
# what went where. env/demo.sh and env/test.sh run it after building.
#
#   env/install.sh [--user] BUILD_DIR
#
# Exit codes: 64 bad arguments, 66 BUILD_DIR is not a configured build; a failing
# `cmake --install` passes its own code on (its output is in BUILD_DIR/install.log).
set -euo pipefail

user=0
build=
for arg in "$@"; do
  case "$arg" in
    --user) user=1 ;;
    -*) echo "install.sh: unknown option $arg (expected --user and a build folder)" >&2; exit 64 ;;
    *)
      if [ -n "$build" ]; then
        echo "install.sh: expected one build folder, got $build and $arg" >&2
        exit 64
      fi
      build=$arg ;;
  esac
done
if [ -z "$build" ]; then
  echo "install.sh: expected a build folder (build/<preset>)" >&2
  exit 64
fi
if [ ! -f "$build/cmake_install.cmake" ]; then
  echo "install.sh: $build is not a configured build (no cmake_install.cmake): env/build.sh first" >&2
  exit 66
fi
if [ "$user" -eq 0 ] && [ "$(id -u)" -eq 0 ]; then
  prefix=/usr/local
else
  prefix=$HOME/.local
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
uninstall="bash $root/env/uninstall.sh"
[ "$user" -eq 0 ] || [ "$(id -u)" -ne 0 ] || uninstall="$uninstall --user"

log=$build/install.log
rc=0
cmake --install "$build" --prefix "$prefix" --strip >"$log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$log" >&2
  echo "install.sh: cmake --install $build --prefix $prefix failed (exit $rc)" >&2
  exit "$rc"
fi
manifest=$build/install_manifest.txt

# The record env/uninstall.sh reads: every file an install wrote into this prefix, itself too
# (the build's install_manifest.txt lists its latest install only).
record=$prefix/share/dl/install_manifest.txt
{
  [ ! -f "$record" ] || cat "$record"
  cat "$manifest"
  echo
  echo "$record"
} | sed '/^$/d' | sort -u >"$record.new"
mv "$record.new" "$record"

bin=$prefix/bin
if grep -qxF "$bin/dl-train" "$manifest"; then
  programs="dl-launch and dl-train"
else
  programs="dl-launch (dl-train was not built: no LibTorch)"
fi
python=$(sed -n 's/^-- Python modules for \(.*\): .*/\1/p' "$log")
pydir=$(sed -n 's/^-- Python modules for .*: \(.*\)/\1/p' "$log")
if [ -z "$pydir" ]; then
  modules="no Python modules (python3 not found)"
elif grep -qF "$pydir/dl_loader/_core" "$manifest"; then
  modules="dl_plan and dl_loader (for $python) in $pydir"
else
  modules="dl_plan (for $python; dl_loader was not built) in $pydir"
fi

echo "install.sh: installed $programs in $bin, $modules"
echo "install.sh: to remove them: $uninstall (it removes the files listed in $record)"

# A bin folder the caller's shell does not search yet, and how to get it there.
case ":$PATH:" in
  *":$bin:"*) ;;
  *)
    login=$HOME/.profile
    for file in "$HOME/.bash_profile" "$HOME/.bash_login"; do
      if [ -f "$file" ]; then
        login=$file
        break
      fi
    done
    # shellcheck disable=SC2016 # the line to add, as written
    line='PATH="$HOME/.local/bin:$PATH"'
    if [ "$prefix" != "$HOME/.local" ]; then
      echo "install.sh: $bin is not on this shell's PATH: add it (export PATH=\"$bin:\$PATH\")"
    elif grep -q '\.local/bin' "$login" 2>/dev/null; then
      echo "install.sh: $bin is not on this shell's PATH yet: a new login shell has it ($login adds it), or now: export $line"
    else
      echo "install.sh: $bin is not on this shell's PATH: add the line $line to $login (then log in again), or now: export $line"
    fi ;;
esac
# A python3 first on PATH that is another Python (pyenv's, a venv's) does not see the modules.
typed=$(command -v python3 || true)
if [ -n "$pydir" ] && [ "$(readlink -f "$typed")" != "$(readlink -f "$python")" ]; then
  echo "install.sh: python3 on this shell's PATH is ${typed:-none}, not $python: import dl_plan and dl_loader with $python"
fi
# A module folder the Python does not search (a prefix other than /usr/local and ~/.local).
if [ -n "$pydir" ] && ! "$python" -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$pydir"; then
  echo "install.sh: $pydir is not on $python's path: export PYTHONPATH=$pydir"
fi
