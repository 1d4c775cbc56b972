#!/usr/bin/env bash
# spark-submit the coordinator to Kubernetes in cluster mode, from the image built with deploy/k8s/Dockerfile:
#   deploy/k8s/submit.sh --master k8s://https://api.example:6443 [--bootstrap-servers kafka:9092] [-- run flags]
# The code, entry point and log4j2 config are already in the image (local:// URIs); the checkpoint is the PVC
# mounted at /checkpoint; the site properties come from ConfigMap coordinator-site.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export COORDINATOR_ZIP=local:///opt/coordinator/coordinator-pyfiles.zip
export COORDINATOR_ENTRY=local:///opt/coordinator/entry.py
export COORDINATOR_REMOTE_PYTHON=/opt/venv/bin/python
export COORDINATOR_FILES=""      # conf and log4j2 come from the image and the ConfigMaps
args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
exec "$root/deploy/spark/submit-cluster.sh" "${args[@]}" \
  --checkpoint-location /checkpoint/group-coordinator \
  --properties-file "$root/deploy/k8s/spark-k8s.conf" \
  -- --config /etc/coordinator/site/coordinator.properties "$@"
