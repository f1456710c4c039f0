#!/usr/bin/env bash
# Runs a test suite over the ceph backend with a storage-side agent: starts
# `fgds agent --ceph-conf $CEPH_CONF` (the whole file system) on a free
# loopback port with a fresh key, makes every mount of the suite use it
# (FGDS_TEST_MOUNT_ARGS=--agents ... --agent-key ...), and fails unless the
# suite passed AND the agent served reads and writes (a suite that passed
# through the daemon's own libcephfs only would prove nothing about agents).
#
#   with-agent.sh FGDS_BINARY COMMAND [ARGS...]     (CEPH_CONF set; as root)
set -uo pipefail
fgds=${1:?usage: with-agent.sh FGDS_BINARY COMMAND [ARGS...]}
shift
: "${CEPH_CONF:?with-agent.sh needs CEPH_CONF (tests/ceph/start-cluster.sh)}"
T=$(mktemp -d /tmp/fgds-with-agent.XXXXXX)
agent_pid=
cleanup() {
  [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null && wait "$agent_pid" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
head -c 48 /dev/urandom | base64 >"$T/key"
chmod 600 "$T/key"
"$fgds" agent --listen 127.0.0.1:0 --ceph-conf "$CEPH_CONF" --key "$T/key" \
  >"$T/agent.out" 2>&1 &
agent_pid=$!
for _ in $(seq 300); do
  grep -q ' on ' "$T/agent.out" && break
  kill -0 "$agent_pid" 2>/dev/null || break
  sleep 0.1
done
agent=$(sed -n '1s/.* on \([^ ]*\) .*/\1/p' "$T/agent.out")
if [ -z "$agent" ]; then
  echo "with-agent: the agent did not start:" >&2
  cat "$T/agent.out" >&2
  exit 1
fi
echo "with-agent: $(head -1 "$T/agent.out")"
FGDS_TEST_MOUNT_ARGS="${FGDS_TEST_MOUNT_ARGS:-} --agents $agent --agent-key $T/key" \
  "$@"
rc=$?
kill "$agent_pid"
wait "$agent_pid"
agent_pid=
summary=$(tail -1 "$T/agent.out")
echo "with-agent: $summary"
# "... N reads (B bytes), M writes (...": both must be non-zero.
reads=$(sed -n 's/.* \([0-9]*\) reads .*/\1/p' <<<"$summary")
writes=$(sed -n 's/.* \([0-9]*\) writes .*/\1/p' <<<"$summary")
if [ "$rc" -eq 0 ] && { [ "${reads:-0}" -eq 0 ] || [ "${writes:-0}" -eq 0 ]; }; then
  echo "with-agent: the suite passed but the agent served no reads or no writes" >&2
  rc=1
fi
exit "$rc"
