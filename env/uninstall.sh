#!/usr/bin/env bash
# Removes what env/install.sh installed: the files listed in PREFIX/share/dl/install_manifest.txt
# (what each `cmake --install` wrote, gathered by env/install.sh), the bytecode Python compiled
# from them (__pycache__/NAME.*.pyc), and the folders left empty (up to, not including, PREFIX's
# bin/, share/ and the Python's site-packages or dist-packages). Nothing else. PREFIX is
# /usr/local as root, ~/.local otherwise or with --user, as for env/install.sh. Each removed file
# is named, and the last line counts them.
#
#   env/uninstall.sh [--user]
#
# Exit codes: 64 bad arguments; 1 when a listed file could not be removed (the list is kept).
set -euo pipefail

user=0
for arg in "$@"; do
  case "$arg" in
    --user) user=1 ;;
    *) echo "uninstall.sh: unknown argument $arg (expected nothing, or --user)" >&2; exit 64 ;;
  esac
done
if [ "$user" -eq 0 ] && [ "$(id -u)" -eq 0 ]; then
  prefix=/usr/local
else
  prefix=$HOME/.local
fi
record=$prefix/share/dl/install_manifest.txt
if [ ! -f "$record" ]; then
  echo "uninstall.sh: nothing to remove: $record is absent (env/install.sh writes it)"
  exit 0
fi

# A folder emptied by the removal goes too, unless it is one a prefix or a Python owns.
keep() {
  case "$1" in
    "$prefix" | "$prefix/bin" | "$prefix/share" | */site-packages | */dist-packages | / | .) return 0 ;;
  esac
  [[ "$1" != "$prefix"/* ]]
}
prune() {
  local dir=$1
  while ! keep "$dir" && [ -d "$dir" ] && rmdir "$dir" 2>/dev/null; do
    dir=$(dirname "$dir")
  done
}

removed=0
failed=0
folders=()
mapfile -t files <"$record"
for file in "${files[@]}"; do
  if [ -z "$file" ] || [ "$file" = "$record" ] || { [ ! -e "$file" ] && [ ! -L "$file" ]; }; then
    continue
  fi
  if rm -f -- "$file"; then
    echo "uninstall.sh: removed $file"
    removed=$((removed + 1))
  else
    failed=$((failed + 1))
    continue
  fi
  dir=$(dirname "$file")
  if [[ "$file" == *.py ]]; then
    name=$(basename "$file" .py)
    rm -f -- "$dir/__pycache__/$name".*.pyc
    prune "$dir/__pycache__"
  fi
  folders+=("$dir")
done

if [ "$failed" -ne 0 ]; then
  echo "uninstall.sh: $failed file(s) of $record could not be removed (root's? run it as their owner); the list is kept" >&2
  exit 1
fi
rm -f -- "$record"
folders+=("$(dirname "$record")")
# Deepest first, so that a folder is pruned after the folders in it.
if [ "${#folders[@]}" -gt 0 ]; then
  while IFS= read -r dir; do
    prune "$dir"
  done < <(printf '%s\n' "${folders[@]}" | sort -u | awk '{ print length($0) " " $0 }' | sort -rn | cut -d' ' -f2-)
fi
echo "uninstall.sh: removed $removed file(s) that env/install.sh installed in $prefix"
# Another install (root's in /usr/local, a user's in ~/.local) still answers by these names: say
# so, or the user takes the removal for a failure.
for program in dl-launch dl-train; do
  if other=$(command -v "$program" 2>/dev/null); then
    echo "uninstall.sh: $program still runs from $other, another install (not this one's list)"
  fi
done
