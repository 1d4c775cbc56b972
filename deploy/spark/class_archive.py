"""Make the driver JVM's class-data-sharing archive (see `streaming/spark_runtime/class_archive.py`) by running the job
once.

    python -m deploy.spark.class_archive [--force]

The training run is the job's own start and restart path on an embedded tansu broker: the session and its Python
workers, the query on a new checkpoint, a consumer group that joins, syncs, heartbeats and commits, then the query
stopped and started again on the same checkpoint (the recovery path) for a second round. The JVM runs with
`-XX:ArchiveClassesAtExit`, so when this tool ends it, the JVM writes every class it loaded to the archive. About a
minute on two cores; `deploy/local/bootstrap` runs it once per JVM and Spark.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from streaming.spark_runtime.class_archive import DRIVER_OPTIONS, archive_path

log = logging.getLogger("class-archive")


def train(archive: Path, timeout_s: float = 120.0) -> None:
    """Run the job's start, a group's life and a query restart in a JVM that dumps its classes to `archive`."""
    from common import config as job_config
    from common.topics import ensure_topics
    from streaming.kafka_io.embedded import start_broker
    from streaming.query import spark_session, start_query

    broker = start_broker()
    try:
        with tempfile.TemporaryDirectory(prefix="class-archive-") as work:
            props = job_config.load(None, {"bootstrap.servers": broker.bootstrap_servers,
                                           "checkpoint.location": f"{work}/checkpoint", "metrics.log": "",
                                           "group.initial.rebalance.delay.ms": "0"})
            ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, props)
            conf = job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS)
            conf[DRIVER_OPTIONS] = f"{conf.get(DRIVER_OPTIONS, '')} -XX:ArchiveClassesAtExit={archive}".strip()
            spark = spark_session(conf)
            for round_ in range(2):
                query = start_query(spark, props)
                _group_round(props, f"training-{round_}", timeout_s)
                query.stop()
            _exit_jvm(spark, timeout_s)
    finally:
        broker.stop()


def _group_round(props: dict[str, str], group: str, timeout_s: float) -> None:
    """One consumer through the job: join, sync, heartbeats, a commit, leave."""
    from client.consumer import GroupConsumer

    consumer = GroupConsumer(props["topic.records"], bootstrap_servers=props["bootstrap.servers"], group_id=group,
                             control_topic=props["topic.requests"], response_topic=props["topic.responses"],
                             session_timeout_ms=10_000, auto_offset_reset="earliest")
    try:
        deadline = time.monotonic() + timeout_s
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{group}: no assignment within {timeout_s:.0f} s")
            consumer.poll(200)
        consumer.poll(200)
        consumer.commit()
    finally:
        consumer.close()


def _exit_jvm(spark, timeout_s: float) -> None:
    """Stop Spark, then let the driver JVM exit the way it does when its Python driver goes away (end of input on
    its stdin; it calls System.exit, the exit that writes the archive), and wait until it is gone."""
    launched = spark.sparkContext._gateway.proc  # the JVM process pyspark started (spark-submit execs java)
    spark.stop()
    launched.stdin.close()
    launched.wait(timeout_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.spark.class_archive", description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="make it again even if this JVM and Spark have one")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("kafka", "py4j"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    target = archive_path()
    if target is None:
        print("class archive: no java or no Spark jars found; nothing to do", file=sys.stderr)
        return 1
    if target.is_file() and not args.force:
        print(f"class archive: {target} is there already")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".partial-{os.getpid()}")
    started = time.monotonic()
    try:
        train(partial)
        if not partial.is_file():
            print("class archive: the JVM wrote no archive", file=sys.stderr)
            return 1
        os.replace(partial, target)  # a driver never sees a half-written archive
    finally:
        partial.unlink(missing_ok=True)
    print(f"class archive: {target} ({target.stat().st_size >> 20} MB, {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
