# shellcheck shell=bash
# Sourced by the tests that run the built driver as root on a temporary directory of their own
# (run-sanity.sh, sidecars-deploy/test/check-dashboard.sh).

# Unmounts everything mounted under the directory, deepest first, and detaches the loop devices
# whose backing file is under it: what the driver, or a test that failed half-way, left behind
# there, and nothing elsewhere.
release_scratch() { # dir
  local dev
  grep -F " $1/" /proc/self/mountinfo | awk '{print $5}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  for dev in $(losetup -n -O NAME,BACK-FILE 2>/dev/null | awk -v w="$1/" 'index($2, w) == 1 {print $1}'); do
    losetup -d "$dev" 2>/dev/null || true
  done
}

# Prints a loopback port nobody listens on, for the driver's metrics.
free_loopback_port() {
  local port
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo "no free loopback port found for the driver's metrics" >&2
  return 1
}
