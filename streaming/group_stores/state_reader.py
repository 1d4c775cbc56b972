"""The groups of a checkpoint, read with Spark's state data source (`statestore`), for either state operator.

This is what makes the state inspectable offline: `groupcoord-consumer-groups --checkpoint PATH` reads a stopped
query's groups through it (and answers from them with the core, `state.offline`). It reads the last committed
batch; the query need not run, and nothing is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from state.api import StoredGroup
from streaming.recovery.checkpoint import OPERATOR_NAMES, CheckpointError, existing

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def stored_groups(spark: SparkSession, location: str, group_ids: Iterable[str] | None = None) -> dict[str, StoredGroup]:
    """group_id -> StoredGroup of every group (or only `group_ids`) at the checkpoint's last committed batch.
    CheckpointError when `location` holds no checkpoint."""
    checkpoint = existing(spark, location)
    if checkpoint.batch is None or checkpoint.operator_name is None:
        return {}
    wanted = None if group_ids is None else sorted(set(group_ids))
    if checkpoint.operator_name == OPERATOR_NAMES["transformWithState"]:
        metadata = _map(spark, location, checkpoint.batch, "groups", wanted)
        offsets = _map(spark, location, checkpoint.batch, "offsets", wanted)
        by_group = {r.group_id: r.value.metadata for r in metadata.collect()}
        offsets_of = {r.group_id: r.value.offsets for r in offsets.collect()}
        return {g: StoredGroup(bytes(m), None if offsets_of.get(g) is None else bytes(offsets_of[g]))
                for g, m in sorted(by_group.items())}
    if checkpoint.operator_name == OPERATOR_NAMES["applyInPandasWithState"]:
        from streaming.group_stores.bucket_blobs import ENVELOPE_VERSION, unpack_groups

        rows = (spark.read.format("statestore").option("batchId", checkpoint.batch).load(location)
                .select("value.groupState.version", "value.groupState.groups"))
        groups: dict[str, StoredGroup] = {}
        for version, packed in rows.collect():
            if version != ENVELOPE_VERSION:
                raise CheckpointError(f"checkpoint {location} was made by release 0.1.0: upgrade it first "
                                      "(`coordinator upgrade`)")
            groups.update({g: stored for g, (stored, _) in unpack_groups(bytes(packed)).items()
                           if wanted is None or g in wanted})
        return dict(sorted(groups.items()))
    raise CheckpointError(f"checkpoint {location} holds no coordinator state ({checkpoint.operator_name})")


def _map(spark: SparkSession, location: str, batch: int, name: str, wanted: list[str] | None) -> DataFrame:
    from pyspark.sql import functions as F

    rows = (spark.read.format("statestore").option("batchId", batch).option("stateVarName", name).load(location)
            .select(F.col("user_map_key.group_id").alias("group_id"), F.col("user_map_value").alias("value")))
    return rows if wanted is None else rows.where(F.col("group_id").isin(wanted))
