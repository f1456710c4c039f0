# Shared helpers of the kmod lab scripts (sourced, not run).

lab_cache=${FGDS_LAB_CACHE:-/var/cache/fgds-lab}

lab_log() { echo "kmod-lab: $*" >&2; }

# Installs the Debian packages given that are missing, as
# deploy/install-deps.sh does: nothing (not even apt-get update) when all
# are present.
lab_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  lab_log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Creates a private work directory under $FGDS_LAB_WORK (default /tmp) and
# prints it.
lab_mkwork() {
  local base=${FGDS_LAB_WORK:-/tmp}
  mkdir -p "$base"
  mktemp -d "$base/fgds-$1.XXXXXX"
}

# Copies the sources the modules and the guest program build from into
# DEST, keeping their places relative to each other (their Kbuild files
# reach include/uapi through relative paths): kmod/, include/,
# tests/kmod/exporter/ and tests/kmod/guest/. Outputs of builds done in
# the repository are left behind.
lab_copy_sources() {
  local repo=$1 dest=$2 d
  for d in kmod include tests/kmod/exporter tests/kmod/guest; do
    mkdir -p "$dest/$d"
    cp -a "$repo/$d/." "$dest/$d/"
  done
  find "$dest" \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
    -o -name '.*.cmd' -o -name Module.symvers -o -name modules.order \
    -o -name kmod_lab_test \) -delete
}

# Builds the external module in MODDIR against the kernel build tree KDIR,
# output in LOG. Fails on a build error, and on any compiler or modpost
# warning: only our sources are compiled, so every warning is about them.
lab_build_module() {
  local kdir=$1 moddir=$2 log=$3 warnings
  if ! make -C "$kdir" M="$moddir" modules >"$log" 2>&1; then
    grep -E -B2 -A6 'error|Error' "$log" | head -n 60 >&2 || tail -n 40 "$log" >&2
    lab_log "$moddir: build FAILED against $kdir (log: $log)"
    return 1
  fi
  warnings=$(grep -i -B1 'warning:' "$log" || true)
  if [ -n "$warnings" ]; then
    echo "$warnings" >&2
    lab_log "$moddir: warnings building against $kdir (log: $log)"
    return 1
  fi
}

# Prints BYTES bytes of the lab's deterministic pattern NAME: the AES-128-CTR
# keystream (zeros encrypted, IV 0) under the key made of the first 16 bytes
# of sha256("$FGDS_LAB_PATTERN_SEED:NAME"). Anyone can regenerate it:
#   key=$(printf '%s' "$seed:$name" | sha256sum | cut -c1-32)
#   head -c $bytes /dev/zero |
#     openssl enc -aes-128-ctr -nosalt -K $key -iv 00000000000000000000000000000000
lab_pattern_seed=${FGDS_LAB_PATTERN_SEED:-fgds-lab-1}
lab_pattern() {
  local key
  key=$(printf '%s' "$lab_pattern_seed:$1" | sha256sum | cut -c1-32)
  head -c "$2" /dev/zero |
    openssl enc -aes-128-ctr -nosalt -K "$key" -iv 00000000000000000000000000000000
}
