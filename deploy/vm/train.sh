#!/bin/bash
# The VM's training (dl-train.service's ExecStart): runs dl-launch in the image on the workspace,
# on every GPU, with the settings file's dl-launch settings; continues its run from last.pt when
# there is one (a restart after a failure, a reboot, a preempted VM). exec: the unit's main
# process is the container's client, and `docker stop` (ExecStop) sends SIGTERM to dl-launch
# through tini, so dl-train saves last.pt before the VM goes down.
#
#   train.sh            (settings: see settings.sh)
#
# Exit codes: 78 bad settings file; otherwise dl-launch's (143 when stopped by SIGTERM).
set -euo pipefail

kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=settings.sh
source "$kit/settings.sh"
dl_vm_load_settings

readonly container=dl-train
args=(dl-launch --workspace /root/workspace --name "$DL_NAME")
run_dir=$DL_VM_WORKSPACE/runs/$DL_NAME
if [ -f "$run_dir/last.pt" ]; then
  args+=(--resume true)
  echo "dl-tools: continuing run $DL_NAME from its last.pt"
elif [ -f "$run_dir/best.pt" ]; then
  # Stopped between the first epoch's best.pt and last.pt (best.pt is written first): nothing to
  # resume from, so this VM's own run starts over, where a fresh start would stop with exit 78.
  args+=(--overwrite true)
  echo "dl-tools: run $DL_NAME has a best.pt but no last.pt yet: starting it over"
fi
env_args=()
for key in $DL_VM_PASSED_KEYS; do
  [ -n "${!key:-}" ] && env_args+=(-e "$key")
done

# A container left by a crash of the VM would hold the name.
docker rm -f "$container" >/dev/null 2>&1 || true
# --shm-size, --ulimit: as docker-compose.yml's train service (DataLoader workers, pinned memory).
exec docker run --rm --name "$container" --gpus all --shm-size 8g \
  --ulimit memlock=-1 --ulimit stack=67108864 \
  -v "$DL_VM_WORKSPACE:/root/workspace" -w /root/workspace \
  "${env_args[@]}" "$DL_IMAGE" "${args[@]}"
