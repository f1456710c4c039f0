#!/usr/bin/env bash
# Boots the lab guest once: kernel KDIR/arch/x86/boot/bzImage, initramfs
# DIR/initramfs.cpio.gz, drives and "GPU" memory from lab/images.sh in DIR.
# Writes DIR/console.log (ttyS0) and DIR/results.log (ttyS1); QEMU ends
# when the guest reboots (-no-reboot), panics (panic=-1), or after
# $FGDS_LAB_BOOT_TIMEOUT seconds (default 600; exit status 124 then).
# Guest memory: $FGDS_LAB_MEM (default 1G; KASAN takes an eighth).
#
# Topology (q35, default CPU model, so no host bridge is whitelisted for
# P2P and only a shared upstream bridge makes a P2P route):
#   pcie.0 - rp_sw (root port) - sw_up (x3130 switch upstream port)
#              sw_dn0 - ivshmem-plain, BAR2 = DIR/gpumem (the "GPU")
#              sw_dn1 - nvme serial fgds-raw    (raw.img)
#              sw_dn2 - nvme serial fgds-ext4   (ext4.img)
#              sw_dn3 - nvme serial fgds-slow   (slow.img, reads throttled)
#              sw_dn4 - nvme serial fgds-stack  (stack.img)
#   pcie.0 - rp_alone (root port) - nvme serial fgds-noroute (noroute.img)
set -euo pipefail

kdir=${1:?usage: qemu.sh KDIR DIR}
dir=${2:?usage: qemu.sh KDIR DIR}
timeout_s=${FGDS_LAB_BOOT_TIMEOUT:-600}

args=(
  -machine q35 -accel tcg,thread=multi -smp 2 -m "${FGDS_LAB_MEM:-1G}"
  -nodefaults -display none -no-reboot
  -serial "file:$dir/console.log" -serial "file:$dir/results.log"
  -kernel "$kdir/arch/x86/boot/bzImage" -initrd "$dir/initramfs.cpio.gz"
  -append "console=ttyS0 panic=-1 oops=panic panic_on_warn=1"
  -device pcie-root-port,id=rp_sw,bus=pcie.0,chassis=1,slot=1
  -device x3130-upstream,id=sw_up,bus=rp_sw
  -device xio3130-downstream,id=sw_dn0,bus=sw_up,chassis=2,slot=0
  -device xio3130-downstream,id=sw_dn1,bus=sw_up,chassis=3,slot=0
  -device xio3130-downstream,id=sw_dn2,bus=sw_up,chassis=4,slot=0
  -device xio3130-downstream,id=sw_dn3,bus=sw_up,chassis=6,slot=0
  -device xio3130-downstream,id=sw_dn4,bus=sw_up,chassis=7,slot=0
  -object "memory-backend-file,id=gpumem,size=$(stat -c %s "$dir/gpumem"),mem-path=$dir/gpumem,share=on"
  -device ivshmem-plain,memdev=gpumem,bus=sw_dn0
  -device pcie-root-port,id=rp_alone,bus=pcie.0,chassis=5,slot=0
)
add_drive() {  # add_drive ID IMAGE SERIAL BUS [DRIVE-OPTIONS]
  args+=(-drive "file=$dir/$2,if=none,id=$1,format=raw,cache=none,aio=threads${5:+,$5}"
         -device "nvme,serial=$3,drive=$1,bus=$4")
}
add_drive nv0 raw.img fgds-raw sw_dn1
add_drive nv1 ext4.img fgds-ext4 sw_dn2
add_drive nv2 noroute.img fgds-noroute rp_alone
# Reads at 256 KiB/s: QEMU's leaky bucket lets a request through while the
# bucket is below a tenth of a second's worth, so of a 2 MiB O_DIRECT read
# (four 512 KiB NVMe commands) the first completes at once and the others
# about 2 s apart (measured: 1.1-1.9 s for all four at 512 KiB/s, too
# close to the invalidate_timeout test's 500 ms under a loaded host).
add_drive nv3 slow.img fgds-slow sw_dn3 throttling.bps-read=262144
add_drive nv4 stack.img fgds-stack sw_dn4

# DIR/qemu.pid lets run-lab.sh end QEMU when it is itself interrupted.
timeout -k 10 "$timeout_s" qemu-system-x86_64 "${args[@]}" &
echo $! >"$dir/qemu.pid"
rc=0
wait $! || rc=$?
rm -f "$dir/qemu.pid"
exit $rc
