#!/bin/bash
# Writes deploy/cloud-init.yaml: the user data that turns a cloud GPU VM (NVIDIA driver, Docker and
# the NVIDIA Container Toolkit already on its image) into one that trains on boot. It carries the
# settings file (train.env.example, which the user edits in the output) and this kit's scripts and
# units verbatim, so a VM needs nothing else from this repository. tests/deploy/vm_check.sh fails
# when the committed file differs from this script's output.
#
#   deploy/vm/render-user-data.sh > deploy/cloud-init.yaml
set -euo pipefail

kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
indent() { sed 's/^/      /; s/^ *$//'; }
file_entry() { # PATH MODE SOURCE
  printf '  - path: %s\n    permissions: "%s"\n    content: |\n' "$1" "$2"
  indent <"$3"
}

cat <<'HEAD'
#cloud-config
# dl-tools: a GPU VM that trains on boot. Edit the settings (the first file below), then start a
# VM with this file as its user data (docs/deploy.md: AWS, GCP, Azure). Everything after the
# settings is generated from deploy/vm/ by deploy/vm/render-user-data.sh: change it there.
# At each boot dl-prepare.service formats the data disk only if it is empty, mounts it at
# /mnt/dl, pulls the image and lays out /mnt/dl/workspace; dl-train.service trains, continues
# from last.pt after a failure or reboot, and saves last.pt when the VM stops or is preempted.
# Follow it with `journalctl -u dl-prepare -u dl-train -f` or on the serial console.
write_files:
HEAD
file_entry /etc/dl-tools/train.env 0644 "$kit/train.env.example"
for f in settings.sh prepare-disk.sh prepare.sh train.sh; do
  file_entry "/usr/local/lib/dl-tools/$f" 0755 "$kit/$f"
done
for f in dl-prepare.service dl-train.service; do
  file_entry "/etc/systemd/system/$f" 0644 "$kit/$f"
done
# What install.sh does on a running VM, spelled out (AWS takes 16 KB of user data: the kit's
# installer stays out). --no-block: cloud-init must not wait for a training run.
cat <<'TAIL'
runcmd:
  - [systemctl, daemon-reload]
  - [systemctl, enable, dl-prepare.service, dl-train.service]
  - [systemctl, start, --no-block, dl-train.service]
TAIL
