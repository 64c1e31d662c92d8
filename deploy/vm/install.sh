#!/bin/bash
# Installs the VM kit (this folder): scripts into /usr/local/lib/dl-tools, the two units into
# /etc/systemd/system, enabled so that every boot prepares and trains. Used by the user data
# (deploy/cloud-init.yaml, which has already written the kit in place) and the Packer template.
#
#   install.sh [--root DIR] [--image IMAGE] [--pull] [--start]
#
#   --root DIR     install under DIR (an image being built, the tests); units enabled offline
#   --image IMAGE  write a settings file naming IMAGE where there is none (a baked VM image)
#   --pull         pull IMAGE now, so that a VM from this disk starts with no download
#   --start        start training now (the user data, on a running VM)
# Exit codes: 64 bad arguments; any other is the failing command's.
set -euo pipefail

kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root='' image='' pull=0 start=0
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    --image) image=${2:?--image needs an image reference}; shift 2 ;;
    --pull) pull=1; shift ;;
    --start) start=1; shift ;;
    *) echo "install.sh: unknown argument '$1' (expected --root DIR, --image IMAGE, --pull, --start)" >&2; exit 64 ;;
  esac
done

lib=$root/usr/local/lib/dl-tools
units=$root/etc/systemd/system
settings=$root/etc/dl-tools/train.env
mkdir -p "$lib" "$units" "$(dirname "$settings")"
if [ "$kit" != "$(cd "$lib" && pwd)" ]; then
  install -m 0755 "$kit"/settings.sh "$kit"/prepare-disk.sh "$kit"/prepare.sh "$kit"/train.sh "$kit"/install.sh "$lib/"
fi
install -m 0644 "$kit"/dl-prepare.service "$kit"/dl-train.service "$units/"
if [ -n "$image" ] && [ ! -f "$settings" ]; then
  printf '# What this VM trains (KEY=value; deploy/vm/settings.sh lists the keys).\nDL_IMAGE=%s\n' "$image" >"$settings"
fi
if [ "$pull" -eq 1 ]; then
  [ -n "$image" ] || { echo "install.sh: --pull needs --image" >&2; exit 64; }
  docker pull "$image"
fi

if [ -n "$root" ]; then
  systemctl --root="$root" enable dl-prepare.service dl-train.service
else
  systemctl daemon-reload
  systemctl enable dl-prepare.service dl-train.service
  # --no-block: the user data must not wait for a training run.
  [ "$start" -eq 0 ] || systemctl start --no-block dl-train.service
fi
echo "install.sh: dl-prepare.service and dl-train.service installed and enabled under ${root:-/}"
