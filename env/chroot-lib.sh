# shellcheck shell=bash
# What the suite's build chroots share (sourced by env/cuda-chroot.sh, the newest end: trixie and
# CUDA; env/oldest-chroot.sh, the oldest: bullseye, g++-9 and the jpeg8 ABI): one cache folder per
# chroot, one run at a time on it, a recipe hash that decides when to make it again, debootstrap
# from the archive this machine already uses, and a new chroot made beside the old one and renamed
# into place only when complete, so that a run killed midway leaves no half-made chroot behind.
#
# A script sources this, then calls
#   chroot_begin NAME CACHE_DIR SUITE RECIPE_SCRIPT WORDS...
# which exits 0 printing the chroot's path when the cached one has the same recipe (the lines of
# RECIPE_SCRIPT between "# --- recipe:" and "# --- end of recipe", this file, and WORDS, hashed),
# and otherwise leaves $chroot_tmp to be made: chroot_debootstrap, then in_tmp for the rest, then
# chroot_commit. Exit status of the sourcing script: 0 ready, 77 the archive is unreachable, 69 not
# root or debootstrap missing, 1 any other failure.

chroot_lib_file=${BASH_SOURCE[0]}

chroot_say() { echo "$chroot_name: $*"; }
chroot_die() {
  echo "$chroot_name: $2" >&2
  exit "$1"
}

# Unmounts whatever is mounted under a folder (deepest first), so that it can be removed safely.
unmount_under() {
  local dir
  dir=$(realpath -m "$1")
  awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" || true; done
}

chroot_reachable() { wget -q -T 30 -t 2 -O /dev/null "$chroot_mirror/dists/$chroot_suite/InRelease"; }

# chroot_fail STEP LOG: says where it failed; 77 when the archive went away meanwhile.
chroot_fail() {
  tail -20 "$2" >&2
  chroot_reachable || chroot_die 77 "$1: $chroot_mirror became unreachable (log: $2)"
  chroot_die 1 "$1 failed (log: $2)"
}

chroot_begin() {
  chroot_name=$1
  chroot_cache=$2
  chroot_suite=$3
  local recipe_script=$4
  shift 4
  chroot_root=$chroot_cache/root
  chroot_tmp=$chroot_cache/root.tmp
  chroot_logs=$chroot_cache/logs
  [ "$(id -u)" -eq 0 ] || chroot_die 69 "needs root (debootstrap and chroot)"
  command -v debootstrap >/dev/null 2>&1 ||
    chroot_die 69 "debootstrap is not installed (env/install-native.sh installs it)"
  chroot_recipe=$({
    sed -n '/^# --- recipe:/,/^# --- end of recipe/p' "$recipe_script"
    cat "$chroot_lib_file"
    echo "$chroot_suite $*"
  } | sha256sum | cut -d' ' -f1)

  mkdir -p "$chroot_cache"
  # One run at a time per cache (two test trees may share it).
  exec 9>"$chroot_cache/.lock"
  flock 9
  if [ -f "$chroot_root/.dl-recipe" ] && [ "$(cat "$chroot_root/.dl-recipe")" = "$chroot_recipe" ]; then
    chroot_say "reusing $chroot_root (recipe ${chroot_recipe:0:12})"
    echo "$chroot_root"
    exit 0
  fi
  trap 'unmount_under "$chroot_tmp"' EXIT

  # The archive this machine already uses (CI may reach only that one), else Debian's default.
  chroot_mirror=${DL_CHROOT_MIRROR:-${DL_CUDA_CHROOT_MIRROR:-}}
  if [ -z "$chroot_mirror" ]; then
    chroot_mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null |
      grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)
    chroot_mirror=${chroot_mirror:-http://deb.debian.org/debian}
  fi
  chroot_mirror=${chroot_mirror%/}
  chroot_reachable ||
    chroot_die 77 "cannot reach $chroot_mirror/dists/$chroot_suite (no network?): the chroot cannot be made"

  chroot_started=$SECONDS
  mkdir -p "$chroot_logs"
  # What a killed run left: a half-made chroot, or the old one it was replacing.
  local leftover
  for leftover in "$chroot_tmp" "$chroot_cache/root.old"; do
    unmount_under "$leftover"
    rm -rf "$leftover"
  done
}

# chroot_debootstrap COMPONENTS SOURCES_LIST: a minbase chroot in $chroot_tmp with that
# sources.list, /proc mounted.
chroot_debootstrap() {
  chroot_say "debootstrap $chroot_suite minbase from $chroot_mirror into $chroot_tmp"
  debootstrap --variant=minbase --components="$1" "$chroot_suite" "$chroot_tmp" "$chroot_mirror" \
    >"$chroot_logs/debootstrap.log" 2>&1 || chroot_fail debootstrap "$chroot_logs/debootstrap.log"
  chroot_say "[$((SECONDS - chroot_started)) s] debootstrap done"
  unmount_under "$chroot_tmp" # debootstrap may leave its /proc mounted
  echo "$2" >"$chroot_tmp/etc/apt/sources.list"
  mount -t proc proc "$chroot_tmp/proc"
}

# in_tmp COMMAND...: runs in the chroot being made, non-interactive.
in_tmp() { chroot "$chroot_tmp" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }

# chroot_install PACKAGES...: apt-get install without recommends, lists cleaned after.
chroot_install() {
  chroot_say "installing $# packages: $*"
  { in_tmp apt-get update -q && in_tmp apt-get install -y -q --no-install-recommends "$@"; } \
    >"$chroot_logs/apt.log" 2>&1 || chroot_fail "apt-get install" "$chroot_logs/apt.log"
  in_tmp apt-get clean
  chroot_say "[$((SECONDS - chroot_started)) s] packages installed"
}

# chroot_commit: records the recipe and puts the new chroot in place of the old one.
chroot_commit() {
  unmount_under "$chroot_tmp"
  echo "$chroot_recipe" >"$chroot_tmp/.dl-recipe"
  if [ -d "$chroot_root" ]; then
    unmount_under "$chroot_root"
    mv "$chroot_root" "$chroot_cache/root.old"
    rm -rf "$chroot_cache/root.old"
  fi
  mv "$chroot_tmp" "$chroot_root"
  chroot_say "[$((SECONDS - chroot_started)) s] made $chroot_root ($(du -sh "$chroot_root" | cut -f1), recipe ${chroot_recipe:0:12})"
  echo "$chroot_root"
}
