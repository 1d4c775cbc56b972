#!/usr/bin/env bash
# Starts a Spark standalone master and N workers on 127.0.0.1 from the pyspark installation (pids recorded in
# var/standalone/cluster.json). Then: deploy/spark/submit-client.sh --master <printed URL> --checkpoint-location ...
#   deploy/standalone/start.sh [--workers 2] [--cores 1] [--memory 1g] [--dir DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
exec .venv/bin/python -m deploy.standalone.cluster start "$@"
