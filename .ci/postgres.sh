#!/bin/sh
# Installs Debian's PostgreSQL server binaries for the PostgreSQL tests and prints their version. Needs root (CI
# containers run as root). The tests start their own throwaway cluster from these binaries (tools/postgres/cluster.ts,
# run from the vitest global setup as the system user a2a-pg, on 127.0.0.1 and a free port, removed at the end);
# the cluster the package may set up is stopped and never used.
set -eu
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then
  echo "postgres.sh: run as root (apt-get install)" >&2
  exit 1
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends postgresql
fi
# The package's own cluster (when its post-install started one) is not the tests' and must not hold a port.
if command -v pg_ctlcluster >/dev/null 2>&1; then
  for conf in /etc/postgresql/*/*; do
    [ -d "$conf" ] || continue
    pg_ctlcluster "$(basename "$(dirname "$conf")")" "$(basename "$conf")" stop >/dev/null 2>&1 || true
  done
fi
"$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/postgres" --version
