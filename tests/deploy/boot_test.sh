#!/bin/bash
# The GPU VM's boot logic (deploy/vm/), run without systemd or Docker as a plain process tree:
#  1. the data disk, on file-backed images with the real blkid, cmp and mkfs.ext4: an empty disk
#     is formatted (ext4, label dl-data), a disk with a file system, a disk with other data and a
#     missing disk are left byte-for-byte alone;
#  2. a bad settings file: prepare.sh and train.sh each stop with exit 78 and exactly one line,
#     and the unit lists 78 in RestartPreventExitStatus= (no restart loop);
#  3. dl-prepare.service's script pulls the image and lays out the workspace with the real
#     `dl-launch init`; a second boot pulls nothing and keeps the workspace;
#  4. dl-train.service's start and stop: its ExecStart (train.sh) trains with the real dl-launch and
#     dl-train; its ExecStop (`docker stop`) sends SIGTERM to dl-launch, which ends with 143 (in
#     SuccessExitStatus=) after dl-train saved last.pt; the next start continues from last.pt at
#     the step after the one the stop saved (exact resume).
# Fake: the docker CLI (tests/deploy/fake-docker.sh: the container's command runs on the host) and
# the mount (DL_DATA_DISK=none in part 3 and 4: the workspace folder stands for /mnt/dl).
#
#   tests/deploy/boot_test.sh LAUNCHER_DIR        (the folder of dl-launch; dl-train in ../trainer)
#
# Exit codes: 0 passed, 1 a check failed, 77 skipped (dl-train not built, or a disk tool missing).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kit=$(cd "$here/../../deploy/vm" && pwd)
launcher_dir=$(cd "${1:?usage: boot_test.sh LAUNCHER_DIR}" && pwd)
[ -x "$launcher_dir/dl-launch" ] || { echo "boot_test.sh: no dl-launch in $launcher_dir" >&2; exit 1; }
if [ ! -x "$launcher_dir/../trainer/dl-train" ]; then
  echo "SKIPPED: dl-train was not built (LibTorch missing): the start/stop part needs it"
  exit 77
fi
for tool in blkid mkfs.ext4 debugfs cmp; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool not installed (env/install-native.sh installs it)"; exit 77; }
done

work=$(mktemp -d)
train_pid=
cleanup() {
  [ -n "$train_pid" ] && kill -KILL "$train_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "boot_test.sh: FAILED: $*" >&2; exit 1; }
step() { echo "--- $*"; }
digest() { sha256sum "$1" | cut -d' ' -f1; }

# ---------------------------------------------------------------------------------------------
step "1. data disk"
disk=$kit/prepare-disk.sh
mib=$((1024 * 1024))

truncate -s $((32 * mib)) "$work/empty.img"
"$disk" "$work/empty.img" || fail "an empty disk: prepare-disk.sh exited $?"
[ "$(blkid -p -o value -s TYPE "$work/empty.img")" = ext4 ] || fail "the empty disk has no ext4 file system"
[ "$(blkid -p -o value -s LABEL "$work/empty.img")" = dl-data ] || fail "the new file system is not labelled dl-data"
before=$(digest "$work/empty.img")
out=$("$disk" "$work/empty.img") || fail "a formatted disk, second boot: exited $?"
[ "$(digest "$work/empty.img")" = "$before" ] || fail "the second boot changed the formatted disk"
grep -q "left as it is" <<<"$out" || fail "the second boot did not say it left the disk alone: $out"
echo "empty disk formatted (ext4, dl-data); unchanged on the next boot"

# A disk with a file system and a file on it (written with debugfs: no mount needed).
truncate -s $((32 * mib)) "$work/data.img"
mkfs.ext4 -q -F -L results "$work/data.img"
echo "epoch 41 results" >"$work/marker"
debugfs -w -R "write $work/marker marker.txt" "$work/data.img" >/dev/null 2>&1
before=$(digest "$work/data.img")
"$disk" "$work/data.img" >/dev/null || fail "a disk with a file system: exited $?"
[ "$(digest "$work/data.img")" = "$before" ] || fail "the disk with a file system was changed"
[ "$(debugfs -R "cat marker.txt" "$work/data.img" 2>/dev/null)" = "epoch 41 results" ] || fail "the file on the data disk is gone"
echo "disk with a file system and a file: left byte-for-byte alone, file intact"

# Data that is no file system: at the start, and only in the last MiB.
for where in head tail; do
  truncate -s $((32 * mib)) "$work/raw-$where.img"
  offset=0
  [ "$where" = tail ] && offset=$((32 * mib - 4096))
  printf 'precious bytes' | dd of="$work/raw-$where.img" bs=1 seek="$offset" conv=notrunc status=none
  before=$(digest "$work/raw-$where.img")
  rc=0
  "$disk" "$work/raw-$where.img" 2>"$work/err" || rc=$?
  [ "$rc" -eq 65 ] || fail "a disk with raw data ($where): expected exit 65, got $rc"
  [ "$(digest "$work/raw-$where.img")" = "$before" ] || fail "the disk with raw data ($where) was changed"
done
echo "disk with raw data (at its start, or only at its end): refused (65), unchanged: $(cat "$work/err")"
rc=0
"$disk" "$work/missing.img" 2>/dev/null || rc=$?
[ "$rc" -eq 66 ] || fail "a missing disk: expected exit 66, got $rc"
[ ! -e "$work/missing.img" ] || fail "a missing disk was created"

# ---------------------------------------------------------------------------------------------
step "2. bad settings file"
export FAKE_DOCKER_STATE=$work/engine FAKE_DOCKER_PATH=$launcher_dir:/usr/bin:/bin
mkdir -p "$work/bin" "$FAKE_DOCKER_STATE"
ln -s "$here/fake-docker.sh" "$work/bin/docker"
export PATH=$work/bin:$PATH
export DL_VM_SETTINGS=$work/train.env DL_VM_MOUNT=$work/mnt
unit_prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$kit/dl-train.service")
grep -qw 78 <<<"$unit_prevent" || fail "dl-train.service: RestartPreventExitStatus=$unit_prevent lacks 78"
bad_case() { # NAME SETTINGS EXPECTED-TEXT
  printf '%s\n' "$2" >"$DL_VM_SETTINGS"
  for script in prepare.sh train.sh; do
    rc=0
    "$kit/$script" >"$work/out" 2>"$work/err" || rc=$?
    [ "$rc" -eq 78 ] || fail "$1: $script exited $rc, expected 78"
    [ "$(wc -l <"$work/err")" -eq 1 ] || fail "$1: $script wrote $(wc -l <"$work/err") lines to stderr, expected one: $(cat "$work/err")"
    [ ! -s "$work/out" ] || fail "$1: $script wrote to stdout: $(cat "$work/out")"
    grep -qF "$3" "$work/err" || fail "$1: $script's line lacks '$3': $(cat "$work/err")"
  done
  echo "$1: exit 78 (no restart), one line: $(cat "$work/err")"
}
bad_case "unknown key" $'DL_IMAGE=registry.example/dl-tools:test\nDL_EPOCH=3' "train.env:2: unknown key DL_EPOCH"
bad_case "no image" 'DL_EPOCHS=3' "DL_IMAGE is not set"
[ ! -e "$FAKE_DOCKER_STATE/calls" ] || fail "a bad settings file still reached docker: $(cat "$FAKE_DOCKER_STATE/calls")"

# ---------------------------------------------------------------------------------------------
step "3. prepare: image and workspace"
image=registry.example/dl-tools:test
cat >"$DL_VM_SETTINGS" <<EOF
# as a user writes it
DL_IMAGE=$image
DL_DATA_DISK=none
DL_NAME=vm
DL_EPOCHS=1
DL_DEVICE=cpu
DL_BATCH_SIZE=64
DL_LIMIT_BATCHES=40
EOF
"$kit/prepare.sh" >"$work/out" 2>&1 || fail "prepare.sh exited $?: $(cat "$work/out")"
grep -qx "docker pull -q $image" "$FAKE_DOCKER_STATE/calls" || fail "prepare.sh did not pull $image"
ws=$DL_VM_MOUNT/workspace
{ [ -f "$ws/dl.conf" ] && [ -f "$ws/python/train.py" ]; } || fail "the workspace was not laid out by dl-launch init: $(ls -A "$ws")"
echo "first boot: pulled $image; dl-launch init laid out $(find "$ws" -mindepth 1 -maxdepth 1 -printf '%f ')"
: >"$FAKE_DOCKER_STATE/calls"
echo "log-every = 5" >>"$ws/dl.conf"
"$kit/prepare.sh" >"$work/out" 2>&1 || fail "prepare.sh (second boot) exited $?"
! grep -q "pull\|dl-launch init" "$FAKE_DOCKER_STATE/calls" || fail "the second boot pulled or initialised again"
grep -q "log-every = 5" "$ws/dl.conf" || fail "the second boot replaced the user's dl.conf"
echo "second boot: no pull, workspace kept"

# ---------------------------------------------------------------------------------------------
step "4. dl-train.service: start, stop, start"
stop_command=$(sed -n 's|^ExecStop=/usr/bin/docker ||p' "$kit/dl-train.service")
[ -n "$stop_command" ] || fail "dl-train.service has no ExecStop=/usr/bin/docker ..."
grep -qw 143 <<<"$(sed -n 's/^SuccessExitStatus=//p' "$kit/dl-train.service")" || fail "dl-train.service: 143 is not a success"
# ExecStart, as systemd starts it; its output read line by line until training is under way.
coproc TRAIN { exec "$kit/train.sh" 2>&1; }
# shellcheck disable=SC2153 # set by coproc
train_pid=$TRAIN_PID
started=0
while IFS= read -r -t 300 line <&"${TRAIN[0]}"; do
  echo "$line" >>"$work/run1.log"
  if [[ "$line" =~ epoch\ 1/1\ batch\ [0-9]+ ]]; then
    started=1
    break
  fi
done
[ "$started" -eq 1 ] || fail "training did not start: $(tail -n 20 "$work/run1.log")"
# The rest of the output keeps flowing to the log while the unit is stopped (a copy of the
# coprocess's descriptor: bash does not pass the original to a background job).
exec {train_out}<&"${TRAIN[0]}"
cat <&"$train_out" >>"$work/run1.log" &
drain=$!
# ExecStop, with the fake docker for /usr/bin/docker (word splitting intended: the unit's words).
# shellcheck disable=SC2086
docker $stop_command
rc=0
wait "$train_pid" || rc=$?
train_pid=
wait "$drain" || true
exec {train_out}<&-
[ "$rc" -eq 143 ] || fail "after ExecStop, train.sh exited $rc (expected 143): $(tail -n 20 "$work/run1.log")"
grep -q -- "--gpus all" "$FAKE_DOCKER_STATE/calls" || fail "train.sh did not ask for the GPUs"
[ -f "$ws/runs/vm/last.pt" ] || fail "no runs/vm/last.pt after the stop: $(tail -n 20 "$work/run1.log")"
grep -q "Terminated received .*saved .*last.pt" "$work/run1.log" || fail "dl-train did not say it saved last.pt on SIGTERM"
echo "start: $(grep -m1 'epoch 1/1 batch' "$work/run1.log")"
echo "stop: exit 143, runs/vm/last.pt saved; last lines: $(tail -n 2 "$work/run1.log" | tr '\n' '|')"

"$kit/train.sh" >"$work/run2.log" 2>&1 || fail "the second start exited $?: $(tail -n 20 "$work/run2.log")"
grep -q "continuing run vm from its last.pt" "$work/run2.log" || fail "the second start did not continue the run"
grep -q "resumed from" "$work/run2.log" || fail "dl-train did not resume: $(tail -n 20 "$work/run2.log")"
grep -q "resume true" "$FAKE_DOCKER_STATE/calls" || fail "the second start did not pass --resume"
# A preemption loses nothing: the second start goes on at the step after the one the stop saved.
step_saved=$(sed -n 's/.*Terminated received in epoch 1 after [0-9]* of [0-9]* batches (step \([0-9]*\)): saved.*/\1/p' "$work/run1.log" | head -1)
[ -n "$step_saved" ] || fail "the stop's line does not name the step it saved: $(grep 'Terminated received' "$work/run1.log")"
grep -q "inside epoch 1 at step $step_saved .*the epoch goes on at batch $((step_saved + 1))," "$work/run2.log" ||
  fail "the second start did not go on at step $((step_saved + 1)): $(grep 'resumed from' "$work/run2.log")"
echo "restart: $(grep -m1 'resumed from' "$work/run2.log" | sed 's/.*resumed/resumed/')"
echo "restart: $(tail -n 1 "$work/run2.log")"
echo "boot_test.sh: passed"
