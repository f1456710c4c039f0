#!/usr/bin/env bash
# One lab run against one guest kernel: builds fgds.ko, the test exporter
# and the guest test program, makes the drives and the initramfs, boots
# the guest, and checks what it reports, on the serial results port and
# through the files behind its devices.
#   run-series.sh SERIES KDIR WORK
# KDIR: the kernel build tree (build-kernel.sh). WORK: an empty directory
# for everything this run writes. Prints the guest's PASS/FAIL/SKIP lines,
# the host's HOSTCHECK verdicts and a summary line; exits 1 on any failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
. "$here/lib.sh"
series=${1:?usage: run-series.sh SERIES KDIR WORK}
kdir=${2:?usage: run-series.sh SERIES KDIR WORK}
work=${3:?usage: run-series.sh SERIES KDIR WORK}
say() { echo "kmod-lab[$series]: $*"; }

# Modules and guest program, built from a copy of the sources.
src=$work/src
lab_copy_sources "$repo" "$src"
lab_build_module "$kdir" "$src/kmod" "$work/kmod.build.log"
lab_build_module "$kdir" "$src/tests/kmod/exporter" "$work/exporter.build.log"
guest=$src/tests/kmod/guest
if ! make -C "$guest" >"$work/guest.build.log" 2>&1; then
  tail -n 40 "$work/guest.build.log" >&2
  say "guest test program FAILED to build (log: $work/guest.build.log)"
  exit 1
fi

# /lab in the guest.
root=$work/root
mkdir -p "$root/lab/bin"
cp "$src/kmod/fgds.ko" "$src/tests/kmod/exporter/fgds_test_exporter.ko" \
   "$guest/guest-tests.sh" "$root/lab/"
cp "$guest/kmod_lab_test" "$root/lab/bin/"
# run-lab.sh's builds of the libfgds and usrbio lab tests and the daemon
# (absent: guest-tests.sh skips their tests).
for bin in "${FGDS_LAB_DIRECT_TEST:-}" "${FGDS_LAB_USRBIO_TEST:-}" \
           "${FGDS_LAB_DAEMON:-}"; do
  [ -z "$bin" ] || cp "$bin" "$root/lab/bin/"
done
"$here/images.sh" "$work"
{ echo "FGDS_LAB_SERIES=$series"; cat "$work/lab.env"; } >"$root/lab/lab.env"
"$here/initramfs.sh" "$root" "$work/initramfs.cpio.gz" "$guest/needs.txt"

start=$SECONDS
qemu_rc=0
"$here/qemu.sh" "$kdir" "$work" || qemu_rc=$?
qemu_s=$((SECONDS - start))

results=$(tr -d '\r' <"$work/results.log")
grep -E '^(PASS|FAIL|SKIP) ' <<<"$results" | sed 's/^/  guest: /' || true
hostchecks=$("$here/hostcheck.sh" "$work/results.log" "$work")
[ -z "$hostchecks" ] || sed 's/^/  host: /' <<<"$hostchecks"

result=$(grep '^FGDS-LAB-RESULT ' <<<"$results" | tail -n1 || true)
timing=$(grep '^FGDS-LAB-TIMING ' <<<"$results" | tail -n1 || true)
guest_passed=$(grep -c '^PASS ' <<<"$results" || true)
guest_failed=$(grep -c '^FAIL ' <<<"$results" || true)
guest_skipped=$(grep -c '^SKIP ' <<<"$results" || true)
host_passed=$(grep -c '^PASS ' <<<"$hostchecks" || true)
host_failed=$(grep -c '^FAIL ' <<<"$hostchecks" || true)
summary="$((guest_passed + host_passed)) passed, $((guest_failed + host_failed)) failed"
summary+=", $guest_skipped skipped (guest $guest_passed/$guest_failed, host checks $host_passed/$host_failed);"
summary+=" seconds: qemu ${qemu_s} (${timing#FGDS-LAB-TIMING })"

why=
if [ $qemu_rc -eq 124 ] || [ $qemu_rc -eq 137 ]; then
  why="guest timed out after ${FGDS_LAB_BOOT_TIMEOUT:-600} s"
elif [ -z "$result" ]; then
  why="guest ended without a result line (crash or panic? qemu status $qemu_rc)"
elif [ $((guest_failed + host_failed)) -ne 0 ]; then
  why="failures"
fi
if [ -n "$why" ]; then
  echo "---- last lines of the guest console ($work/console.log) ----"
  tr -d '\r' <"$work/console.log" | tail -n 60
  echo "----"
  say "FAILED: $why: $summary"
  exit 1
fi
say "passed: $summary"
