#!/bin/bash
# Makes the data disk usable without ever destroying data: a disk that reads as zeros (a new cloud
# volume) gets an ext4 file system labelled dl-data; a disk with a file system is left exactly as
# it is; a disk with a partition table or with data that is not a file system is refused. Works on
# a block device or a file (the tests use file-backed images).
#
#   prepare-disk.sh DEVICE
#
# Prints what it found and did. Exit codes: 0 the disk has a file system now, 65 the disk holds
# something else (left alone), 66 the device does not exist.
set -euo pipefail

device=${1:?usage: prepare-disk.sh DEVICE}
[ -e "$device" ] || { echo "dl-tools: data disk $device does not exist (is it attached? DL_DATA_DISK names it)" >&2; exit 66; }

# What blkid finds by probing the device itself (-p: no cache): TYPE for a file system, PTTYPE for
# a partition table; exit 2 when it finds no signature at all.
probe=$(blkid -p -o export "$device" 2>/dev/null) || probe=
fs_type=$(sed -n 's/^TYPE=//p' <<<"$probe")
pt_type=$(sed -n 's/^PTTYPE=//p' <<<"$probe")

if [ -n "$fs_type" ]; then
  echo "dl-tools: $device has a $fs_type file system: left as it is"
  exit 0
fi
if [ -n "$pt_type" ]; then
  echo "dl-tools: $device has a $pt_type partition table: left alone (set DL_DATA_DISK to one of its partitions)" >&2
  exit 65
fi
# No signature is not enough to call a disk empty: its first and last MiB must read as zeros too.
size=$(blockdev --getsize64 "$device" 2>/dev/null || stat -c %s "$device")
mib=$((1024 * 1024))
if ! cmp -s -n "$mib" "$device" /dev/zero ||
  { [ "$size" -gt "$mib" ] && ! tail -c "$mib" "$device" | cmp -s -n "$mib" - /dev/zero; }; then
  echo "dl-tools: $device holds data that is not a file system: left alone (format it yourself, or point DL_DATA_DISK elsewhere)" >&2
  exit 65
fi
echo "dl-tools: $device is empty: making an ext4 file system labelled dl-data"
# -F: a file (the tests) is not a block device; the checks above are what makes this safe.
mkfs.ext4 -q -F -L dl-data -m 0 "$device"
