#!/usr/bin/env bash
# What a workspace's owner can make the root launcher do: each attack planted as uid 65534 in a
# fresh workspace beside a root-owned directory, run against the given dl-launch and dl-train
# (the built ones by default; an older build's for the "before" column), one table row per
# attack: exit code, seconds, and what happened outside the workspace. The tests
# (WorkspaceAttack.*, WorkspaceConfigAttack.*, PythonInteropZipBomb.*, TrainerBadInput.*Fifo*)
# assert the fixed behaviour; this shows both sides. Needs root, cc and /usr/bin/python3 with torch.
#
#   bench/workspace_attacks.sh [DL_LAUNCH [DL_TRAIN]]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
launch=${1:-$root/build/release/launcher/dl-launch}
train=${2:-$root/build/release/trainer/dl-train}
[ "$(id -u)" -eq 0 ] || { echo "workspace_attacks.sh: needs root (the image's launcher)" >&2; exit 64; }
for program in "$launch" "$train"; do
  [ -x "$program" ] || { echo "workspace_attacks.sh: $program is not an executable" >&2; exit 64; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
owned=$tmp/root-owned
mkdir "$owned"
# shellcheck disable=SC2016 # a shadow line, written as it is
printf 'root:$6$not-for-the-owner:19000:0:99999:7:::\n' >"$tmp/shadow"
chmod 600 "$tmp/shadow"
cat >"$tmp/evil.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void run_as_whoever_loads_me(void) {
  FILE* f = fopen(getenv("ATTACK_MARKER"), "w");
  if (f) fprintf(f, "%d\n", (int)geteuid()), fclose(f);
}
EOF
cc -shared -fPIC -o "$tmp/evil.so" "$tmp/evil.c"
chmod 755 "$tmp/evil.so"
cat >"$tmp/probe-trainer" <<'EOF'
#!/bin/sh
[ "$1" = --probe-batch ] || exit 0
id -u > "$ATTACK_MARKER"
echo "{\"batch\":$2,\"fits\":true,\"out_of_memory\":false,\"peak_bytes\":$(( $2 * 1000 )),\"step_seconds\":0.01,\"device\":\"cpu\",\"precision\":\"fp32\",\"error\":\"\"}"
EOF
chmod 755 "$tmp/probe-trainer"
/usr/bin/python3 - "$tmp/bomb.pth" <<'EOF'
import io, sys, zipfile, torch
saved = io.BytesIO()
torch.save({"fc.weight": torch.zeros(2 ** 28)}, saved)
with zipfile.ZipFile(saved) as src, zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as dst:
    for name in src.namelist():
        dst.writestr(name, src.read(name))
EOF
chmod 644 "$tmp/bomb.pth"

case_no=0
# new_workspace: an empty workspace of uid 65534; $ws names it.
new_workspace() {
  case_no=$((case_no + 1))
  ws=$tmp/ws$case_no
  mkdir "$ws"
  chown 65534:65534 "$ws"
  rm -rf "${owned:?}"/*
}
as_owner() { runuser -u nobody -- "$@"; }
# attempt NAME COMMAND...: runs it (10 s at most), then prints the row.
attempt() {
  local name=$1
  shift
  local started=$SECONDS rc=0
  timeout 10 "$@" >"$tmp/out" 2>&1 </dev/null || rc=$?
  local outside made
  made=$(cd "$owned" && find . -mindepth 1 -printf '%p(uid %U) ' | head -c 200)
  outside=${made:-nothing}
  [ -f "$ws/marker" ] && outside="$outside; ran as uid $(cat "$ws/marker")"
  grep -q 'not-for-the-owner' "$tmp/out" && outside="$outside; root's file quoted"
  [ "$rc" -eq 124 ] && outside="$outside; hung (killed after 10 s)"
  local line
  line=$(grep -m1 -E 'error' "$tmp/out" | cut -c1-150 || true)
  printf '%-34s %4s %4ss  %s\n' "$name" "$rc" "$((SECONDS - started))" "$outside"
  [ -n "$line" ] && printf '%-45s %s\n' "" "$line"
  return 0
}

printf '%-34s %4s %5s  %s\n' attack exit time "made or done outside the workspace"
new_workspace; as_owner ln -s "$owned" "$ws/runs"
attempt "runs -> root dir" "$launch" --workspace "$ws" --name r1 -- /bin/true
new_workspace; as_owner ln -s "$owned" "$ws/.dl"
attempt ".dl -> root dir" "$launch" --workspace "$ws" --name r1 -- /bin/true
new_workspace; as_owner mkdir "$ws/runs"; as_owner ln -s "$owned" "$ws/runs/r1"
attempt "runs/r1 -> root dir" "$launch" --workspace "$ws" --name r1 -- /bin/true
new_workspace; as_owner sh -c "echo 'nvml-library = $tmp/evil.so' > '$ws/dl.conf'"
attempt "dl.conf: nvml-library = evil.so" env ATTACK_MARKER="$ws/marker" "$launch" --workspace "$ws" --dry-run
new_workspace; as_owner sh -c "echo 'run-as-owner = false' > '$ws/dl.conf'"
# shellcheck disable=SC2016 # the program expands it
attempt "dl.conf: run-as-owner = false" env ATTACK_MARKER="$ws/marker" \
  "$launch" --workspace "$ws" --name r1 -- /bin/sh -c 'id -u > "$ATTACK_MARKER"'
new_workspace; as_owner ln -s "$tmp/shadow" "$ws/dl.conf"
attempt "dl.conf -> root-only file" "$launch" --workspace "$ws" --dry-run
new_workspace; as_owner mkfifo "$ws/dl.conf"
attempt "dl.conf a FIFO" "$launch" --workspace "$ws" --dry-run
new_workspace
attempt "batch-size probes" env ATTACK_MARKER="$ws/marker" "$launch" --workspace "$ws" \
  --trainer "$tmp/probe-trainer" --memory-budget 1GiB --samples 1000 --dry-run
new_workspace; as_owner mkdir -p "$ws/runs/r1"; as_owner mkfifo "$ws/runs/r1/last.pt"
attempt "last.pt a FIFO, --resume" runuser -u nobody -- env -C "$ws" "$train" --name r1 --resume --epochs 1 \
  --limit-batches 1 --workers 0 --threads 1 --monitor-every 0
new_workspace
attempt "--init-from 1 MB zip bomb" /usr/bin/time -f "peak %M KiB" -o "$tmp/time" \
  runuser -u nobody -- env -C "$ws" "$train" --init-from "$tmp/bomb.pth" --epochs 1 \
  --limit-batches 1 --workers 0 --threads 1 --monitor-every 0
printf '%-45s %s\n' "" "$(cat "$tmp/time" 2>/dev/null || echo 'no time')"
