#!/usr/bin/env bash
# Prints ConfigMaps for the coordinator: `coordinator-conf` (conf/ defaults + log4j2) and `coordinator-site`
# (your site properties). Apply with: deploy/k8s/configmap.sh my-site.properties | kubectl apply -f -
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
site="${1:?usage: configmap.sh SITE.properties}"
ns="${NAMESPACE:-group-coordinator}"
kubectl create configmap coordinator-conf -n "$ns" --dry-run=client -o yaml \
  --from-file="$root/conf/coordinator.properties" --from-file="$root/conf/spark-defaults.conf" \
  --from-file="$root/conf/log4j2.properties"
echo "---"
kubectl create configmap coordinator-site -n "$ns" --dry-run=client -o yaml \
  --from-file=coordinator.properties="$site"
