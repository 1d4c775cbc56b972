"""The coordinator query: Kafka source -> route -> the state operator per bucket of groups (which produces the
responses, records, dead letters and its bucket's earliest deadline itself) -> one summary row per bucket -> `noop`.

One stage boundary only (the shuffle by (kind, bucket)): routing runs inside the source's `read`, the state task
produces its output (`streaming.kafka_io.sink.KafkaOutput`), deadlines come back through the timers topic
(`streaming.kafka_io.timer_schedule`), and the summary rows only feed the metrics (`observe`), so the sink is Spark's
`noop`: no Python writer.

The operator is `state.operator`: `transformWithState` (the default; a state row per group,
`streaming.group_stores.group_rows`) or `applyInPandasWithState` (release 0.1.0's; a state row per bucket,
`streaming.group_stores.bucket_blobs`). Both run the same core through `streaming.stateful`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from typing import Iterator, Mapping
from weakref import WeakKeyDictionary

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupStateTimeout

from common.config import Topics, client_config, kafka_options, with_driver_logging
from state.api import CoordinatorConfig
from streaming.kafka_io.kafka_clients import chosen_client
from streaming.kafka_io.sink import SUMMARY_COUNTS, SUMMARY_SCHEMA, KafkaOutput
from streaming.kafka_io.source import KafkaSource
from streaming.spark_runtime.class_archive import with_class_archive
from streaming.spark_runtime.jvm_stderr import jvm_stderr_filtered
from streaming.stateful import INPUT_COLUMNS

QUERY_NAME = "group-coordinator"


def _seconds(duration: str) -> int:
    """Whole seconds of a Spark time setting without a unit or in `ms`, `s`, `m` (`60s` -> 60)."""
    text = duration.strip().lower()
    for unit, seconds in (("ms", 0.001), ("s", 1), ("m", 60), ("min", 60)):
        if text.endswith(unit) and text[:-len(unit)].strip().isdigit():
            return max(1, int(int(text[:-len(unit)]) * seconds))
    return int(text)


def spark_session(conf: Mapping[str, str]) -> SparkSession:
    """The session with `conf` applied and the source registered; its Python workers start in the background.

    Under spark-submit the launcher's settings win: `conf` only fills gaps. Otherwise the driver JVM also gets the
    class archive, if one was made for it (`streaming.spark_runtime.class_archive`), and the job's log4j configuration
    (`common.config.with_driver_logging`).

    The warm-up (`warm_up`) runs while the source is registered and the first query starts (`start_query` waits
    for it): each of those steps mostly waits for some Python process to start, so they overlap well.
    """
    from pyspark import SparkConf

    # Python workers must run this interpreter (the one with kafka-python and the project installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if conf.get("spark.driver.bindAddress"):
        # Where the driver binds anyway; without it Spark warns at every start on hosts whose name resolves to a
        # loopback address (most laptops), and picks another interface to say so.
        os.environ.setdefault("SPARK_LOCAL_IP", conf["spark.driver.bindAddress"])
    timeout = conf.get("spark.python.authenticate.socketTimeout")
    if timeout:
        # The JVM waits this long for a Python process to connect back; the Python side of that handshake waits
        # SPARK_AUTH_SOCKET_TIMEOUT seconds (15 by default), which the Python data source's runner does not get
        # from the conf: on a loaded host it gave up first and the query stopped (CANNOT_OPEN_SOCKET).
        os.environ.setdefault("SPARK_AUTH_SOCKET_TIMEOUT", str(_seconds(timeout)))
    builder = SparkSession.builder
    launched = SparkConf() if "PYSPARK_GATEWAY_PORT" in os.environ else None
    for key, value in with_class_archive(with_driver_logging(conf)).items():
        if launched is None or not launched.contains(key):
            builder = builder.config(key, value)
    # A JVM this process starts prints two start-up notices no setting turns off (streaming.spark_runtime.jvm_stderr).
    with jvm_stderr_filtered() if launched is None else nullcontext():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    pool = ThreadPoolExecutor(1, thread_name_prefix="warm-up")
    _warming[spark] = pool.submit(warm_up, spark)
    pool.shutdown(wait=False)
    spark.dataSource.register(KafkaSource)
    return spark


_warming: WeakKeyDictionary[SparkSession, Future] = WeakKeyDictionary()
"""The warm-up `spark_session` started, until `start_query` has waited for it."""


def await_warm_up(spark: SparkSession) -> None:
    """Wait for the session's warm-up, if it has one running; its errors are raised here."""
    warming = _warming.pop(spark, None)
    if warming is not None:
        warming.result()


def warm_up(spark: SparkSession) -> None:
    """Start the Python workers and import the core and kafka-python in them before the first micro-batch, so the
    first requests after a (re)start do not wait for worker start-up (`spark.python.worker.reuse` keeps them)."""

    def import_in_worker(batches):
        import kafka  # noqa: F401
        import state.api  # noqa: F401
        import streaming.stateful  # noqa: F401
        from streaming.spark_runtime.worker_heap import freeze_survivors

        freeze_survivors()
        yield from batches

    parallelism = int(spark.conf.get("spark.sql.shuffle.partitions", "2"))
    spark.range(parallelism, numPartitions=parallelism).mapInPandas(import_in_worker, "id long").collect()


def state_buckets(props: Mapping[str, str]) -> int:
    """`state.buckets`: how many state keys the groups are hashed into. Fixed once a checkpoint exists (the stored
    envelope records it and the adapter refuses another value)."""
    buckets = int(props["state.buckets"])
    if buckets < 1:
        raise ValueError(f"state.buckets must be at least 1, got {buckets}")
    return buckets


def topic_metadata_refresh_ms(props: Mapping[str, str]) -> str:
    """`topic.metadata.refresh.interval.ms`: how often the driver checks the cluster's topics for the consumer groups'
    assignors (`streaming.kafka_io.topic_watch`); 0 turns the publishing off (consumer groups then assign nothing)."""
    interval = int(props["topic.metadata.refresh.interval.ms"])
    if interval < 0:
        raise ValueError(f"topic.metadata.refresh.interval.ms must not be negative, got {interval}")
    return str(interval)


OPERATORS = ("transformWithState", "applyInPandasWithState")


def state_operator(props: Mapping[str, str]) -> str:
    """`state.operator`: which Spark operator keeps the groups (see the module's docstring). Fixed once a
    checkpoint exists (`streaming.recovery.checkpoint` refuses another)."""
    operator = props["state.operator"]
    if operator not in OPERATORS:
        raise ValueError(f"state.operator must be one of {', '.join(OPERATORS)}, got {operator!r}")
    return operator


def start_query(spark: SparkSession, props: Mapping[str, str], query_name: str = QUERY_NAME,
                rehearsal: bool = False, initial_state: DataFrame | None = None) -> StreamingQuery:
    """Start the coordinator on the topics, checkpoint and trigger in `props` (see conf/coordinator.properties).

    `rehearsal`: the same plan with a state function that reads its input and does nothing else (see `rehearse`).
    `initial_state`: groups for the first batch of a new checkpoint (`streaming.recovery.upgrade`), rows of
    `streaming.group_stores.group_rows.INITIAL_STATE_COLUMNS`; the default operator only.
    """
    topics = Topics.from_properties(props)
    kafka = kafka_options(props)
    operator = state_operator(props)
    buckets = state_buckets(props)
    # Deadlines come back as timer rows (`streaming.kafka_io.timer_schedule`): no batch ever runs without input.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    requests = (spark.readStream.format(KafkaSource.name()).options(**kafka)
                .option("subscribe", topics.requests).option("route", "true")
                .option("startingOffsets", props["starting.offsets"])
                .option("maxOffsetsPerTrigger", props["max.requests.per.trigger"])
                .option("failOnDataLoss", props["fail.on.data.loss"])
                .option("timersTopic", topics.timers)
                .option("buckets", str(buckets))
                .option("offsetsRetentionMs", str(CoordinatorConfig.from_properties(props).offsets_retention_ms))
                .options(**({} if rehearsal else {"viewsTopic": topics.views,
                                                  "rotateRecords": props["topic.requests.rotate.records"] or "0",
                                                  "retireAfterMs": props["topic.requests.retire.after.ms"],
                                                  "replicationFactor": props["topic.replication.factor"]}))
                # a standby's rehearsal reads, but does not write, the active driver's control topic
                .option("topicMetadataRefreshMs", "0" if rehearsal else topic_metadata_refresh_ms(props))
                .load())
    records_source = {"topic": topics.records, "config": client_config(kafka)}
    output = KafkaOutput(client_config(kafka), {"response": topics.responses, "record": topics.records,
                                                "dead_letter": topics.dead_letters, "deadline": topics.timers,
                                                "view": topics.views},
                         chosen_client(kafka))
    config = CoordinatorConfig.from_properties(props)
    grouped = requests.select(*INPUT_COLUMNS).groupBy("kind", "bucket")
    if operator == "transformWithState":
        from streaming.group_stores.group_rows import GroupRows, ReadOnlyRows

        processor = ReadOnlyRows() if rehearsal else GroupRows(config, records_source, output)
        initial = None if initial_state is None else initial_state.groupBy("kind", "bucket")
        summary = grouped.transformWithState(processor, SUMMARY_SCHEMA, "Append", "ProcessingTime",
                                             initialState=initial)
    else:
        from streaming.group_stores.bucket_blobs import STATE_SCHEMA, bucket_function

        if initial_state is not None:
            raise ValueError("an initial state needs state.operator=transformWithState")
        function = _read_only if rehearsal else bucket_function(config, records_source, output, buckets)
        summary = grouped.applyInPandasWithState(function, SUMMARY_SCHEMA, STATE_SCHEMA, "append",
                                                 GroupStateTimeout.NoTimeout)
    summary = summary.observe("coordinator", *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in SUMMARY_COUNTS))
    query = (summary.writeStream.format("noop")
             .option("checkpointLocation", props["checkpoint.location"])
             .outputMode("append")
             .trigger(processingTime=f"{int(props['trigger.interval.ms'])} milliseconds")
             .queryName(query_name)
             .start())
    await_warm_up(spark)
    return query


def stop_between_batches(query, timeout_s: float = 5.0) -> None:
    """Stop the query when no batch is running, if one ends within `timeout_s`: stopping in the middle of a batch is
    safe (it is replayed) but makes Spark log the cancelled write at ERROR, stack traces included."""
    deadline = time.monotonic() + timeout_s
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.01)
    query.stop()


def rehearse(spark: SparkSession, props: Mapping[str, str], timeout_s: float = 120.0) -> None:
    """Run the query's plan for a few batches on a scratch checkpoint, reading the requests topic from its end and
    changing nothing, so that this driver has started every Python process the real query needs (data source
    creation, read planning, a worker per read task) and compiled its plan. A standby rehearses before it waits:
    when it takes over, its first batch runs on warm processes and code."""
    with tempfile.TemporaryDirectory(prefix="rehearsal-", ignore_cleanup_errors=True) as scratch:
        query = start_query(spark, {**props, "checkpoint.location": scratch, "starting.offsets": "latest"},
                            query_name=f"{QUERY_NAME}-rehearsal", rehearsal=True)
        try:
            # The first batch calls every bucket once (a run's timer schedule starts empty), and no other batch
            # follows without input: the next progress is Spark's idle report, 10 s later (it used to be waited for).
            deadline = time.monotonic() + timeout_s
            while not _ran_a_batch(query) and query.isActive and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            query.stop()


def _ran_a_batch(query: StreamingQuery) -> bool:
    """Whether the query has run a batch: a progress with the batch's own phases, not an idle report."""
    return any("addBatch" in progress["durationMs"] for progress in query.recentProgress)


def _read_only(key: tuple, batches: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
    """The rehearsal's state function: it takes its rows as the coordinator's does, and neither keeps state nor
    produces anything."""
    for _ in batches:
        pass
    return iter(())
