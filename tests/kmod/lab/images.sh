#!/usr/bin/env bash
# Makes the guest's drives and "GPU" memory in DIR, fresh for every boot
# (the tests write to them), and the host-side part of /lab/lab.env:
#   raw.img      nvme serial fgds-raw: pattern "raw", behind the switch
#   ext4.img     nvme serial fgds-ext4: ext4 (4 KiB blocks) holding data.bin
#                (pattern "ext4file"), behind the switch
#   noroute.img  nvme serial fgds-noroute: pattern "noroute", on its own
#                root port, so no P2P route to the ivshmem "GPU"
#   slow.img     nvme serial fgds-slow: pattern "slow", behind the switch,
#                reads throttled by QEMU (lab/qemu.sh), so a request stays
#                in flight for seconds (invalidate_timeout)
#   stack.img    nvme serial fgds-stack: pattern "stack", with an ext4
#                filesystem from 1 MiB on holding stack.bin (pattern
#                "stackfile"), behind the switch: the stack_* tests put
#                dm-linear (offset 1 MiB) and md raid0 over it
#   gpumem       the ivshmem BAR2 backing file, zeros
#   data.bin     the host's copy of the ext4 file, for HOSTCHECK lines
#   lab.env      sizes, seed and serials
# Patterns: lab_pattern in lib.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
dir=${1:?usage: images.sh DIR}
mib=$((1024 * 1024))
raw_size=$((128 * mib))
data_size=$((64 * mib))
ext4_size=$((96 * mib))
noroute_size=$((16 * mib))
slow_size=$((16 * mib))
# As large as noroute.img: md raid0 over the two has a single zone.
stack_size=$noroute_size
stack_fs_off=$mib
stack_file_size=$((4 * mib))
gpumem_size=$((256 * mib))

lab_pattern raw $raw_size >"$dir/raw.img"
lab_pattern noroute $noroute_size >"$dir/noroute.img"
lab_pattern slow $slow_size >"$dir/slow.img"
lab_pattern stack $stack_size >"$dir/stack.img"
mkdir -p "$dir/stack-root"
lab_pattern stackfile $stack_file_size >"$dir/stack-root/stack.bin"
rm -f "$dir/stack-fs.img"
mkfs.ext4 -q -F -b 4096 -L fgds-stack -d "$dir/stack-root" \
  "$dir/stack-fs.img" $(((stack_size - stack_fs_off) / 1024))k >/dev/null
dd if="$dir/stack-fs.img" of="$dir/stack.img" bs=$mib seek=1 conv=notrunc \
  status=none
rm -rf "$dir/stack-root" "$dir/stack-fs.img"
mkdir -p "$dir/ext4-root"
lab_pattern ext4file $data_size >"$dir/ext4-root/data.bin"
rm -f "$dir/ext4.img"
mkfs.ext4 -q -F -b 4096 -L fgds-ext4 -d "$dir/ext4-root" "$dir/ext4.img" \
  $((ext4_size / 1024))k >/dev/null
mv "$dir/ext4-root/data.bin" "$dir/data.bin"
rmdir "$dir/ext4-root"
rm -f "$dir/gpumem"
truncate -s $gpumem_size "$dir/gpumem"

cat >"$dir/lab.env" <<ENV
FGDS_LAB_PATTERN_SEED=$lab_pattern_seed
FGDS_LAB_GPUMEM_SIZE=$gpumem_size
FGDS_LAB_RAW_SERIAL=fgds-raw
FGDS_LAB_RAW_SIZE=$raw_size
FGDS_LAB_EXT4_SERIAL=fgds-ext4
FGDS_LAB_EXT4_SIZE=$ext4_size
FGDS_LAB_EXT4_FILE=data.bin
FGDS_LAB_EXT4_FILE_SIZE=$data_size
FGDS_LAB_NO_ROUTE_SERIAL=fgds-noroute
FGDS_LAB_NO_ROUTE_SIZE=$noroute_size
FGDS_LAB_SLOW_SERIAL=fgds-slow
FGDS_LAB_SLOW_SIZE=$slow_size
FGDS_LAB_STACK_SERIAL=fgds-stack
FGDS_LAB_STACK_SIZE=$stack_size
FGDS_LAB_STACK_FS_OFF=$stack_fs_off
FGDS_LAB_STACK_FILE=stack.bin
FGDS_LAB_STACK_FILE_SIZE=$stack_file_size
ENV
