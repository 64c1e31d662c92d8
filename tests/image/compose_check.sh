#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine (Debian's docker-compose v1 parses and
# resolves it: `config -q`), and checks that the services the README names are there.
#
#   tests/image/compose_check.sh [REPO]
#
# Exit codes: 0 valid, 1 invalid or a service missing, 77 skipped (docker-compose not installed).
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
compose=$root/docker-compose.yml
if ! command -v docker-compose >/dev/null 2>&1; then
  echo "SKIPPED: docker-compose is not installed (apt-get install docker-compose; env/install-native.sh installs it)"
  exit 77
fi

if ! docker-compose --project-directory "$root" -f "$compose" config -q; then
  echo "compose_check.sh: $compose is not valid (docker-compose config)" >&2
  exit 1
fi
services=$(docker-compose --project-directory "$root" -f "$compose" config --services)
for service in train train-cpu plan shell test; do
  grep -qx "$service" <<<"$services" || { echo "compose_check.sh: no service '$service' in $compose" >&2; exit 1; }
done
echo "compose_check.sh: $compose is valid; services: $(tr '\n' ' ' <<<"$services")"
