#!/bin/bash
# The VM's preparation at each boot (dl-prepare.service, before dl-train.service): reads the
# settings, prepares and mounts the data disk, pulls the image unless the VM already has it (a
# baked VM image does), and lays out the workspace with `dl-launch init` the first time.
#
#   prepare.sh          (settings: see settings.sh)
#
# Exit codes: 0 ready, 78 bad settings file, 65/66 the data disk (prepare-disk.sh), 69 the image
# could not be pulled; any other is the failing command's.
set -euo pipefail

kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=settings.sh
source "$kit/settings.sh"
dl_vm_load_settings

mkdir -p "$DL_VM_MOUNT"
if [ "$DL_DATA_DISK" != none ]; then
  "$kit/prepare-disk.sh" "$DL_DATA_DISK"
  if ! mountpoint -q "$DL_VM_MOUNT"; then
    mount "$DL_DATA_DISK" "$DL_VM_MOUNT"
  fi
  echo "dl-tools: $DL_DATA_DISK mounted at $DL_VM_MOUNT"
else
  echo "dl-tools: no data disk (DL_DATA_DISK=none): the workspace is on the boot disk, $DL_VM_MOUNT"
fi
mkdir -p "$DL_VM_WORKSPACE"

if docker image inspect "$DL_IMAGE" >/dev/null 2>&1; then
  echo "dl-tools: image $DL_IMAGE is present"
else
  pulled=0
  for attempt in 1 2 3; do
    if docker pull -q "$DL_IMAGE"; then
      pulled=1
      break
    fi
    echo "dl-tools: pulling $DL_IMAGE failed (attempt $attempt of 3)" >&2
  done
  [ "$pulled" -eq 1 ] || { echo "dl-tools: could not pull $DL_IMAGE (name, registry login, network?)" >&2; exit 69; }
fi

if [ -f "$DL_VM_WORKSPACE/dl.conf" ]; then
  echo "dl-tools: workspace $DL_VM_WORKSPACE is laid out"
else
  docker run --rm -v "$DL_VM_WORKSPACE:/root/workspace" "$DL_IMAGE" dl-launch init /root/workspace
  echo "dl-tools: workspace laid out in $DL_VM_WORKSPACE"
fi
