#!/usr/bin/env bash
# Runs the coordinator job on a Spark cluster in client deploy mode: the driver (and the query) runs here, executors
# on the cluster. Works with a standalone master (spark://), YARN and Kubernetes (k8s://) in client mode.
#
#   deploy/spark/submit-client.sh --master spark://10.0.0.5:7077 --checkpoint-location /mnt/shared/coordinator \
#       --bootstrap-servers kafka-1:9092,kafka-2:9092 [--config site.properties] [--properties-file site-spark.conf] \
#       [--driver-host 10.0.0.9] [-- any `coordinator run` flag ...]
#
# --checkpoint-location is required: a location every executor and any restarted driver reach the same way (a
#   mounted path such as NFS or a PVC, or an hdfs:// / s3a:// URL). Only Spark writes there: its offset and commit
#   logs and the state store.
# --config      coordinator properties over conf/coordinator.properties (shipped with --files as well).
# --properties-file  Spark settings over conf/spark-defaults.conf + deploy/spark/cluster-defaults.conf.
# --driver-host the address executors use to reach this driver (default: 127.0.0.1, for a loopback cluster).
# COORDINATOR_PYTHON  Python for the driver and executors (default .venv/bin/python); executors need the native
#   packages at the pinned versions (docs/operations.md, "Native dependencies"). SPARK_HOME picks spark-submit (default .venv's).
# SPARK_SUBMIT_ARGS   extra spark-submit arguments, word-split.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

master="" checkpoint="" bootstrap="" user_config="" driver_host="127.0.0.1"
props_files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --master) master="$2"; shift 2 ;;
    --checkpoint-location) checkpoint="$2"; shift 2 ;;
    --bootstrap-servers) bootstrap="$2"; shift 2 ;;
    --config) user_config="$2"; shift 2 ;;
    --properties-file) props_files+=("$2"); shift 2 ;;
    --driver-host) driver_host="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (coordinator run flags go after --)" ;;
  esac
done
[ -n "$master" ] || die "--master is required (spark://host:7077, yarn, k8s://https://...)"
[ -n "$checkpoint" ] || die "--checkpoint-location is required (a directory on a filesystem shared by the cluster)"

build_zip
merge_properties "${props_files[@]}"
log4j="${COORDINATOR_LOG4J:-$root/conf/log4j2.properties}"
# The driver JVM starts here, so it gets the class archive here too, if this JVM and Spark have one
# (python -m deploy.spark.class_archive makes it).
class_archive="$(cd "$root" && "$python_bin" -m streaming.spark_runtime.class_archive --java-option)"
files="$root/conf/coordinator.properties"
run_args=(run --checkpoint-location "$checkpoint" --spark-defaults "$merged_props")
[ -n "$bootstrap" ] && run_args+=(--bootstrap-servers "$bootstrap")
if [ -n "$user_config" ]; then
  files="$files,$user_config"
  run_args+=(--config "$user_config")
fi

# shellcheck disable=SC2086
exec "$spark_submit" \
  --master "$master" --deploy-mode client \
  --properties-file "$merged_props" \
  --conf "spark.driver.host=$driver_host" \
  --conf "spark.pyspark.python=$python_bin" --conf "spark.pyspark.driver.python=$python_bin" \
  --conf "spark.executorEnv.PYTHONHASHSEED=0" \
  --driver-java-options "-Dlog4j2.configurationFile=file:$log4j $class_archive" \
  --conf "spark.executor.extraJavaOptions=-Dlog4j2.configurationFile=file:$log4j" \
  --py-files "$zip" --files "$files" \
  ${SPARK_SUBMIT_ARGS:-} \
  "$root/deploy/spark/entry.py" "${run_args[@]}" "$@"
