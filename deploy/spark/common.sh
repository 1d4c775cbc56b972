# Shared by submit-client.sh and submit-cluster.sh (sourced, not run).
# Sets: root, spark_submit, zip, merged_props; functions: build_zip, merge_properties, die.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python_bin="${COORDINATOR_PYTHON:-$root/.venv/bin/python}"
# spark-submit from SPARK_HOME if set, else from the pyspark installation of that Python (the pip wheel ships
# bin/spark-submit and bin/spark-class, whose find-spark-home needs a `python` it may not find on PATH).
if [ -z "${SPARK_HOME:-}" ]; then
  SPARK_HOME="$("$python_bin" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
fi
export SPARK_HOME
spark_submit="$SPARK_HOME/bin/spark-submit"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$python_bin}" PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-$python_bin}"

die() { echo "$(basename "$0"): $*" >&2; exit 2; }

# The --py-files zip (schemas, state, assignors, common, streaming, coordinator, kafka-python, conf/), rebuilt every
# time: it is reproducible, so an unchanged tree gives the same bytes.
build_zip() {
  zip="${COORDINATOR_ZIP:-$root/dist/coordinator-pyfiles.zip}"
  "$python_bin" "$root/deploy/spark/package.py" --out "$zip" >&2
}

# One properties file for spark-submit: conf/spark-defaults.conf without its local-only keys, then
# deploy/spark/cluster-defaults.conf, then the operator's files ($@), later lines winning (java.util.Properties).
# The file outlives the launcher (it execs spark-submit, which reads it at start-up); it is small.
merge_properties() {
  merged_props="$(mktemp "${TMPDIR:-/tmp}/coordinator-spark-XXXXXX.conf")"
  {
    echo "# merged by $(basename "$0") from conf/spark-defaults.conf, deploy/spark/cluster-defaults.conf $*"
    grep -Ev '^[[:space:]]*(spark\.master|spark\.driver\.bindAddress|spark\.driver\.host)[[:space:]]' \
      "$root/conf/spark-defaults.conf"
    cat "$root/deploy/spark/cluster-defaults.conf"
    for extra in "$@"; do cat "$extra"; echo; done
  } > "$merged_props"
}
