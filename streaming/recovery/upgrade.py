"""`coordinator upgrade`: a checkpoint that keeps its groups in bucket rows becomes a new checkpoint of the default
layout, a row per group, with every group exactly as it was.

Reads the old checkpoint's state at its last committed batch with Spark's state data source (`statestore`; any
filesystem Spark reads), unpacks each bucket row into groups (release 0.1.0's rows, whose groups are one document
each, go through `state.batch.upgrade_state`), and starts the query on the new checkpoint with those groups as
`transformWithState`'s initial state and the old checkpoint's last committed source offsets as its starting
offsets. Its first batch stores the groups, handles whatever requests came after the old checkpoint's last batch
(the old checkpoint's planned but uncommitted batch included), and calls every bucket: sessions restart then, as
after any restart. The command stops once that batch is committed; `coordinator run` then continues on the new
checkpoint. The old checkpoint is only read.

Groups are hashed into the new checkpoint's `state.buckets`, which may differ from the old one's.
"""

from __future__ import annotations

import logging
import struct
import time
from typing import Iterator, Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from streaming.recovery.checkpoint import CheckpointError, existing, inspect

log = logging.getLogger("coordinator.upgrade")

INITIAL_STATE = StructType([StructField("kind", StringType()), StructField("bucket", IntegerType()),
                            StructField("group_id", StringType()), StructField("metadata", BinaryType()),
                            StructField("offsets", BinaryType()), StructField("deadline", LongType())])
"""`streaming.group_stores.group_rows.INITIAL_STATE_COLUMNS`, typed."""


def upgrade(spark: SparkSession, props: Mapping[str, str], old_location: str, timeout_s: float = 600.0) -> int:
    """Make the checkpoint of `props` from `old_location`; returns the number of groups carried over."""
    from streaming.query import start_query, state_buckets, stop_between_batches

    old = existing(spark, old_location)
    if old.batch is None:
        raise CheckpointError(f"checkpoint {old_location} has no committed batch: there is nothing to upgrade")
    if old.operator_name != "applyInPandasWithState":
        raise CheckpointError(f"checkpoint {old_location} does not keep its groups in bucket rows "
                              f"({old.operator_name}): it needs no upgrade")
    new_location = props["checkpoint.location"]
    if inspect(spark, new_location).batch is not None:
        raise CheckpointError(f"checkpoint {new_location} already has batches: upgrade into a new location")
    groups = bucket_groups(spark, old_location, old.batch, state_buckets(props)).cache()
    count = groups.count()
    log.info("upgrading %s (batch %d, %d group(s)) into %s", old_location, old.batch, count, new_location)
    new_props = {**props, "state.operator": "transformWithState",
                 "starting.offsets": old.starting_offsets(props["topic.requests"])}
    query = start_query(spark, new_props, query_name="group-coordinator-upgrade", initial_state=groups)
    try:
        deadline = time.monotonic() + timeout_s
        while not query.recentProgress and query.isActive and time.monotonic() < deadline:
            time.sleep(0.2)
        if not query.recentProgress:
            query.awaitTermination(1)  # raises the query's own error, if it failed
            raise TimeoutError(f"the upgrade's first batch did not complete within {timeout_s:.0f} s")
    finally:
        stop_between_batches(query)
        groups.unpersist()
    return count


def bucket_groups(spark: SparkSession, location: str, batch: int, buckets: int) -> DataFrame:
    """Every group of a bucket-row checkpoint at `batch`, as initial-state rows hashed into `buckets`."""
    rows = (spark.read.format("statestore").option("batchId", batch).load(location)
            .select("value.groupState.version", "value.groupState.groups"))
    return spark.createDataFrame(rows.rdd.flatMap(lambda row: unpacked(row[0], bytes(row[1]), buckets)),
                                 INITIAL_STATE)


def unpacked(version: int, packed: bytes, buckets: int) -> Iterator[tuple]:
    """The initial-state rows of one bucket row (envelope version 2 of release 0.1.0, or the current one)."""
    from streaming.buckets import bucket_of
    from streaming.group_stores.bucket_blobs import ENVELOPE_VERSION, unpack_groups

    if version == 2:
        groups = _unpack_release_0_1(packed)
    elif version == ENVELOPE_VERSION:
        groups = unpack_groups(packed)
    else:
        raise CheckpointError(f"bucket row envelope version {version} is unknown to this release")
    for group_id, (stored, deadline) in groups.items():
        yield "group", bucket_of(group_id, buckets), group_id, stored.metadata, stored.offsets, deadline


_RELEASE_0_1_HEADER = struct.Struct(">IIq")  # group_id length, stored document length, deadline (-1: none)


def _unpack_release_0_1(packed: bytes) -> dict:
    from state.api import upgrade_state

    groups = {}
    at = 0
    while at < len(packed):
        name_len, blob_len, deadline = _RELEASE_0_1_HEADER.unpack_from(packed, at)
        at += _RELEASE_0_1_HEADER.size
        group_id = packed[at:at + name_len].decode()
        at += name_len
        groups[group_id] = (upgrade_state(packed[at:at + blob_len]), None if deadline == -1 else deadline)
        at += blob_len
    return groups
