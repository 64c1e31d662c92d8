#!/bin/bash
# The VM's settings: reads /etc/dl-tools/train.env (KEY=value lines; # comments), refuses unknown
# keys and a missing image with one line on stderr (the journal and the serial console) and exit
# 78, the code the units name in RestartPreventExitStatus= so a bad file never loops. Sourced by
# prepare.sh and train.sh; the values are read as text, never run as shell.
#
#   DL_VM_SETTINGS  the file (default /etc/dl-tools/train.env)
#   DL_VM_MOUNT     where the data disk is mounted (default /mnt/dl); the workspace is its workspace/

# EX_CONFIG from sysexits.h: the settings file is wrong; restarting cannot help.
readonly DL_VM_EXIT_CONFIG=78
# Keys of the VM itself, then dl-launch's settings passed to the container as DL_* variables.
readonly DL_VM_KEYS="DL_IMAGE DL_DATA_DISK DL_NAME"
readonly DL_VM_PASSED_KEYS="DL_EPOCHS DL_MODEL DL_DATA DL_LR DL_WORKERS DL_THREADS DL_BATCH_SIZE DL_PRECISION DL_MEMORY_BUDGET DL_LIMIT_BATCHES DL_GRACE_PERIOD DL_DEVICE DL_NPROC_PER_NODE"

dl_vm_fail_config() {
  echo "dl-tools: $*" >&2
  exit "$DL_VM_EXIT_CONFIG"
}

# Sets DL_VM_SETTINGS, DL_VM_MOUNT, DL_VM_WORKSPACE and every key the file gives (exported).
dl_vm_load_settings() {
  DL_VM_SETTINGS=${DL_VM_SETTINGS:-/etc/dl-tools/train.env}
  DL_VM_MOUNT=${DL_VM_MOUNT:-/mnt/dl}
  DL_VM_WORKSPACE=$DL_VM_MOUNT/workspace
  export DL_VM_SETTINGS DL_VM_MOUNT DL_VM_WORKSPACE
  local file=$DL_VM_SETTINGS line key value n=0
  [ -r "$file" ] || dl_vm_fail_config "$file: not found or not readable (the user data writes it: deploy/cloud-init.yaml)"
  while IFS= read -r line || [ -n "$line" ]; do
    n=$((n + 1))
    line=${line%%#*}
    line=${line%"${line##*[![:space:]]}"}
    [ -z "${line//[[:space:]]/}" ] && continue
    [[ "$line" =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] ||
      dl_vm_fail_config "$file:$n: expected KEY=value, got '$line'"
    key=${BASH_REMATCH[1]}
    value=${BASH_REMATCH[2]}
    # One pair of quotes around the value is allowed and removed.
    [[ "$value" =~ ^\"(.*)\"$ || "$value" =~ ^\'(.*)\'$ ]] && value=${BASH_REMATCH[1]}
    case " $DL_VM_KEYS $DL_VM_PASSED_KEYS " in
      *" $key "*) ;;
      *) dl_vm_fail_config "$file:$n: unknown key $key (expected one of: $DL_VM_KEYS $DL_VM_PASSED_KEYS)" ;;
    esac
    [[ "$value" =~ ^[A-Za-z0-9_./:@+=,-]*$ ]] ||
      dl_vm_fail_config "$file:$n: $key='$value' has a character outside letters, digits and ._/:@+=,-"
    export "$key=$value"
  done <"$file"
  [ -n "${DL_IMAGE:-}" ] ||
    dl_vm_fail_config "$file: DL_IMAGE is not set (expected the image to train with, e.g. ghcr.io/OWNER/dl-tools:0.1.0)"
  [[ "$DL_IMAGE" =~ ^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_.-]+)?(@sha256:[0-9a-f]{64})?$ ]] ||
    dl_vm_fail_config "$file: DL_IMAGE=$DL_IMAGE is not an image reference (expected registry/name:tag)"
  export DL_NAME=${DL_NAME:-vm}
  [[ "$DL_NAME" =~ ^[A-Za-z0-9._-]+$ ]] ||
    dl_vm_fail_config "$file: DL_NAME=$DL_NAME: letters, digits, '.', '-' and '_' only (it names runs/<name>/)"
  export DL_DATA_DISK=${DL_DATA_DISK:-none}
  [ "$DL_DATA_DISK" = none ] || [[ "$DL_DATA_DISK" == /dev/* ]] ||
    dl_vm_fail_config "$file: DL_DATA_DISK=$DL_DATA_DISK (expected a device path under /dev, or none)"
}
