#!/usr/bin/env bash
# copy_tree FROM TO: sourced by the checks that build in a fixed place outside the checkout
# (tests/sanitizers, tests/fuzz). TO becomes a copy of FROM's files (its build/ and .git/ left out);
# a file is written only where its bytes differ, so an unchanged file keeps the time ninja knows.
# With the source at the same path from run to run, whichever folder the clone is in, ninja
# rebuilds what changed and ccache hits for the rest (ccache keys on the paths in the compile
# command, which a build folder outside the clone makes absolute: CCACHE_BASEDIR cannot help).
copy_tree() {
  local from=$1 to=$2 sums
  mkdir -p "$to"
  sums=$(mktemp -d)
  (cd "$from" && find . \( -path ./build -o -path ./.git \) -prune -o -type f -print0 |
    xargs -0 -r sha1sum | LC_ALL=C sort -k 2) >"$sums/from"
  (cd "$to" && find . \( -path ./build -o -path ./.git \) -prune -o -type f -print0 |
    xargs -0 -r sha1sum | LC_ALL=C sort -k 2) >"$sums/to"
  # Files gone from FROM leave TO; files new or changed in FROM are copied (paths without blanks).
  LC_ALL=C join -1 2 -2 2 -v 2 -o 2.2 "$sums/from" "$sums/to" |
    (cd "$to" && xargs -r -d '\n' rm -f --)
  LC_ALL=C join -1 2 -2 2 -a 1 -e - -o 0,1.1,2.1 "$sums/from" "$sums/to" |
    awk '$2 != $3 {print $1}' | (cd "$from" && xargs -r -d '\n' cp --parents --preserve=mode -t "$to" --)
  rm -rf "$sums"
}
