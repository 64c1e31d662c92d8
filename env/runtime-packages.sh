#!/usr/bin/env bash
# Prints the distribution packages that own the shared libraries the given programs link
# directly (their NEEDED entries, located by ldd; apt brings the packages' own dependencies),
# one a line: what the image's runtime stage installs so that dl-launch and dl-train run there
# without the build stage's compilers and headers. Libraries no package owns (the LibTorch
# download in /opt/libtorch) are copied by the Dockerfile instead.
#
#   env/runtime-packages.sh PROGRAM...
#
# Exit codes: 64 no program given, 66 a program does not exist, 69 a library is not found.
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "runtime-packages.sh: expected one or more programs" >&2
  exit 64
fi

libs=()
for program in "$@"; do
  if [ ! -f "$program" ]; then
    echo "runtime-packages.sh: $program does not exist" >&2
    exit 66
  fi
  if ldd "$program" | grep -q 'not found'; then
    echo "runtime-packages.sh: $program: $(ldd "$program" | grep 'not found' | head -1 | xargs)" >&2
    exit 69
  fi
  needed=$(objdump -p "$program" | awk '$1 == "NEEDED" { print $2 }')
  # ldd's lines look like "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)".
  while read -r name lib; do
    if grep -qxF "$name" <<<"$needed"; then libs+=("$lib"); fi
  done < <(ldd "$program" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
done

for lib in "${libs[@]}"; do
  # dpkg knows a file by the path its package ships, which on merged-/usr systems may be the
  # /lib or the /usr/lib spelling of what ldd printed: try both.
  real=$(readlink -f "$lib")
  for path in "$lib" "$real" "/usr${real#/usr}" "${real#/usr}"; do
    if owner=$(dpkg-query -S "$path" 2>/dev/null); then
      echo "${owner%%:*}"
      break
    fi
  done
done | sort -u
