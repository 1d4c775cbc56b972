#!/usr/bin/env bash
# Runs the coordinator job on a Spark cluster in cluster deploy mode: the driver runs on the cluster too, so the
# job survives the submitting machine. Spark supports cluster mode for Python applications on YARN and Kubernetes
# only (a standalone master rejects it: use submit-client.sh there, under a supervisor that restarts it).
#
#   deploy/spark/submit-cluster.sh --master yarn --checkpoint-location /mnt/shared/coordinator \
#       --bootstrap-servers kafka-1:9092 [--config site.properties] [--properties-file site-spark.conf] [-- flags]
#   deploy/spark/submit-cluster.sh --master k8s://https://api.example:6443 --checkpoint-location /checkpoint \
#       --bootstrap-servers kafka:9092 --properties-file deploy/k8s/spark-k8s.conf     # see deploy/k8s/submit.sh
#
# The --py-files zip, entry point, conf files and log4j2 config are uploaded by spark-submit: on YARN through the
# staging directory, on Kubernetes through spark.kubernetes.file.upload.path (set it in your properties file), or
# already in the image when given as local:// URIs (COORDINATOR_ZIP=local:///opt/coordinator/coordinator-pyfiles.zip
# COORDINATOR_ENTRY=local:///opt/coordinator/entry.py skip the local build).
# The checkpoint must be a path mounted at the same place in the driver and executors (a PVC on Kubernetes).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

master="" checkpoint="" bootstrap="" user_config=""
props_files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --master) master="$2"; shift 2 ;;
    --checkpoint-location) checkpoint="$2"; shift 2 ;;
    --bootstrap-servers) bootstrap="$2"; shift 2 ;;
    --config) user_config="$2"; shift 2 ;;
    --properties-file) props_files+=("$2"); shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (coordinator run flags go after --)" ;;
  esac
done
[ -n "$master" ] || die "--master is required (yarn or k8s://https://...)"
[ -n "$checkpoint" ] || die "--checkpoint-location is required (a path mounted in the driver and every executor)"
case "$master" in
  spark://*|local*) die "cluster deploy mode of Python applications is not supported by Spark on $master; use submit-client.sh" ;;
esac

if [ -n "${COORDINATOR_ZIP:-}" ] && [[ "$COORDINATOR_ZIP" == *://* ]]; then
  zip="$COORDINATOR_ZIP"
else
  build_zip
fi
entry="${COORDINATOR_ENTRY:-$root/deploy/spark/entry.py}"
merge_properties "${props_files[@]}"
# Files spark-submit uploads: the log4j2 config and coordinator.properties, unless they are already in the image
# (COORDINATOR_FILES="" with the log4j options in your properties file, as deploy/k8s/submit.sh does).
log4j="$root/conf/log4j2.properties"
files="${COORDINATOR_FILES-$log4j,$root/conf/coordinator.properties}"
java_opts=()
if [ -n "$files" ]; then
  # YARN localizes --files into the containers' working directories before the JVMs start.
  java_opts=(--conf "spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=log4j2.properties"
             --conf "spark.executor.extraJavaOptions=-Dlog4j2.configurationFile=log4j2.properties")
fi
# In cluster mode the conf files arrive in the driver's working directory under their base names.
run_args=(run --checkpoint-location "$checkpoint")
[ -n "$bootstrap" ] && run_args+=(--bootstrap-servers "$bootstrap")
if [ -n "$user_config" ]; then
  files="${files:+$files,}$user_config"
  run_args+=(--config "$(basename "$user_config")")
fi
python_remote="${COORDINATOR_REMOTE_PYTHON:-python3}"
files_args=()
[ -n "$files" ] && files_args=(--files "$files")

# shellcheck disable=SC2086
exec "$spark_submit" \
  --master "$master" --deploy-mode cluster \
  --properties-file "$merged_props" \
  --conf "spark.pyspark.python=$python_remote" --conf "spark.pyspark.driver.python=$python_remote" \
  "${java_opts[@]}" \
  --py-files "$zip" "${files_args[@]}" \
  ${SPARK_SUBMIT_ARGS:-} \
  "$entry" "${run_args[@]}" "$@"
