#!/usr/bin/env bash
# Builds blockpool-csi when needed and runs it in the foreground with a local default pool, for
# trying it by hand (e.g. with grpcurl). Node operations (loop devices, mounts) need root.
#   BLOCKPOOL_HOME  where the pool and socket go (default: ~/.local/share/blockpool)
# Extra arguments are passed to the driver (e.g. --log-level debug).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JAVA_HOME=$("$repo/scripts/java-home.sh")
export JAVA_HOME
home=${BLOCKPOOL_HOME:-${XDG_DATA_HOME:-$HOME/.local/share}/blockpool}
mkdir -p "$home/pool"

jar=$repo/driver/target/blockpool-csi.jar
if [[ ! -f $jar ]] || [[ -n $(find "$repo" -path "$repo/.cache" -prune -o \( -name '*.java' -o -name pom.xml \) -newer "$jar" -print -quit) ]]; then
  (cd "$repo" && ./mvnw -B -q -DskipTests install)
fi
echo "blockpool-csi: socket $home/csi.sock, pool $home/pool" >&2
exec "$repo/bin/blockpool-csi" --endpoint "unix://$home/csi.sock" --pool-dir "$home/pool" "$@"
