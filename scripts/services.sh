#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer for the tests. Uses the
# machine's own servers if they are up; otherwise starts the installed ones, or throwaway ones
# from the installed binaries (installing them with apt if missing) — never Docker.
set -euo pipefail

redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }
if ! redis_up; then
  command -v redis-server >/dev/null || { apt-get update -q && apt-get install -y -q redis-server; }
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir /tmp --logfile /tmp/farm-redis.log
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || { echo "Redis did not come up on 127.0.0.1:6379" >&2; exit 1; }
fi

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
pg_up && exit 0
command -v pg_isready >/dev/null || { apt-get update -q && apt-get install -y -q postgresql; }
if ls /etc/postgresql/*/main >/dev/null 2>&1; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! pg_up; then
  bin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
  dir=/tmp/farm-pg
  if [ ! -d "$dir" ]; then
    mkdir -p "$dir" && chown postgres "$dir"
    su postgres -c "$bin/initdb -D $dir -A trust -U postgres" >/dev/null
  fi
  # initdb and pg_ctl refuse to run as root: run them as the postgres user.
  su postgres -c "$bin/pg_ctl -D $dir -l $dir/log -o '-k /tmp -h 127.0.0.1 -p 5432' start -w" >/dev/null
fi
for _ in $(seq 1 30); do pg_up && exit 0; sleep 1; done
echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2
exit 1
