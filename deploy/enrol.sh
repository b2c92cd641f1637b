#!/usr/bin/env bash
# Enrol this lab machine as a farm worker, as root:
#   sudo FARM_PG_PASSWORD=… bash deploy/enrol.sh --tags igpu --head 10.0.0.5 [--concurrency 2]
# (--pg-password … works too, but shows the password to anyone running `ps` meanwhile.)
# Installs the farm into /opt/mcp-farm, writes /etc/mcp-farm/worker.env and starts the
# farm-worker systemd unit. Safe to run again (it updates the install and restarts).
set -euo pipefail

tags="" head="" concurrency=1 pg_password="${FARM_PG_PASSWORD:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --tags) tags=$2; shift 2 ;;
    --head) head=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --pg-password) pg_password=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$tags" ] && [ -n "$head" ] || { echo "usage: enrol.sh --tags TAG[,TAG] --head HOST" >&2; exit 2; }
[ -n "$pg_password" ] || { echo "give --pg-password or set FARM_PG_PASSWORD" >&2; exit 2; }

src=$(cd "$(dirname "$0")/.." && pwd)
id farm >/dev/null 2>&1 || useradd --system --create-home --shell /usr/sbin/nologin farm
mkdir -p /opt/mcp-farm /etc/mcp-farm
cp -a "$src"/. /opt/mcp-farm/
chown -R farm: /opt/mcp-farm
su farm -s /bin/bash -c "cd /opt/mcp-farm && bash scripts/setup.sh"

# Made unreadable to others before the database password is written into it.
install -m 600 /dev/null /etc/mcp-farm/worker.env
cat > /etc/mcp-farm/worker.env <<ENV
FARM_DATABASE_URL=postgresql+psycopg://farm:${pg_password}@${head}:5432/farm
FARM_BROKER_URL=redis://${head}:6379/0
FARM_DATA_DIR=/opt/mcp-farm/farm-data
FARM_WORKER_TAGS=${tags}
FARM_WORKER_CONCURRENCY=${concurrency}
ENV
chmod 600 /etc/mcp-farm/worker.env

install -m 644 /opt/mcp-farm/deploy/farm-worker.service /etc/systemd/system/farm-worker.service
systemctl daemon-reload
systemctl enable --now farm-worker
systemctl restart farm-worker
echo "enrolled: check with \`farm workers\` on the head node (journalctl -u farm-worker for logs)"
