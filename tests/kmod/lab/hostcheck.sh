#!/usr/bin/env bash
# Checks, after QEMU has exited, the bytes the guest tests asked the host to
# check, through the files behind the guest's devices in DIR (lab/images.sh).
# Reads the HOSTCHECK lines of RESULTS (offsets and lengths in hex):
#   HOSTCHECK bar_off=X src=raw|ext4file src_off=Y len=Z
#     the "GPU" memory (ivshmem BAR2 = gpumem) at X equals the raw drive
#     (raw.img, as the run left it) or data.bin at Y, for Z bytes
#   HOSTCHECK-DISK raw_off=X bar_off=Y len=Z
#     raw.img at X equals gpumem at Y, for Z bytes
# Prints one PASS or FAIL line for each.
#   hostcheck.sh RESULTS DIR
set -euo pipefail

results=${1:?usage: hostcheck.sh RESULTS DIR}
dir=${2:?usage: hostcheck.sh RESULTS DIR}

# same A A_OFF B B_OFF LEN: whether LEN bytes of A at A_OFF equal B's at
# B_OFF (both files long enough).
same() {
  local a_size b_size
  a_size=$(stat -c %s "$1") b_size=$(stat -c %s "$3")
  [ $(($2 + $5)) -le "$a_size" ] && [ $(($4 + $5)) -le "$b_size" ] &&
    cmp -s -i "$2:$4" -n "$5" "$1" "$3"
}

# field NAME: the value of NAME=hex in $line as a number; fails when the
# field is missing or not hex.
field() {
  local v
  v=$(grep -o -E "(^| )$1=(0x)?[0-9a-fA-F]+( |$)" <<<"$line" | tr -d ' ') || return 1
  v=${v#*=}
  echo $((16#${v#0x}))
}

n=0
while IFS= read -r line; do
  line=${line%$'\r'}
  case $line in HOSTCHECK\ *|HOSTCHECK-DISK\ *) ;; *) continue ;; esac
  n=$((n + 1))
  src=$(grep -o -E ' src=[a-z0-9]+' <<<"$line" | cut -d= -f2 || true)
  if [ "${line%% *}" = HOSTCHECK ] && [ "$src" = raw ]; then
    a=$dir/gpumem b=$dir/raw.img
    a_off=$(field bar_off) && b_off=$(field src_off) && len=$(field len) || a=
  elif [ "${line%% *}" = HOSTCHECK ] && [ "$src" = ext4file ]; then
    a=$dir/gpumem b=$dir/data.bin
    a_off=$(field bar_off) && b_off=$(field src_off) && len=$(field len) || a=
  elif [ "${line%% *}" = HOSTCHECK-DISK ]; then
    a=$dir/raw.img b=$dir/gpumem
    a_off=$(field raw_off) && b_off=$(field bar_off) && len=$(field len) || a=
  else
    a=
  fi
  if [ -z "$a" ]; then
    echo "FAIL hostcheck-$n: malformed: $line"
  elif same "$a" "$a_off" "$b" "$b_off" "$len"; then
    echo "PASS hostcheck-$n: $line"
  else
    echo "FAIL hostcheck-$n: bytes differ: $line"
  fi
done <"$results"
