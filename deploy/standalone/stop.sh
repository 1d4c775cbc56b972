#!/usr/bin/env bash
# Stops the cluster started by start.sh: SIGKILL to exactly the recorded pids' process groups.
#   deploy/standalone/stop.sh [--dir DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
exec .venv/bin/python -m deploy.standalone.cluster stop "$@"
