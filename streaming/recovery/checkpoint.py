"""What a checkpoint holds, read through Spark (so the same on a local disk, HDFS or S3), and whether this release
can run on it.

A checkpoint keeps its layout for life: the state operator (`state.operator`), `state.buckets` (recorded in every
offset by the source) and the layout of its state rows. `check` refuses a checkpoint this query cannot continue
before any batch runs, naming what to do:

- made by release 0.1.0 (a state row per bucket, and offsets without `buckets`): `coordinator upgrade` turns it
  into a new checkpoint of this release, or `coordinator run --rebuild-from-records` starts a new one from the
  records topic;
- made with the other operator: set `state.operator` back, or upgrade (`coordinator upgrade` reads
  `applyInPandasWithState` checkpoints of either release).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from common.generations import generation_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TWS_OPERATOR_NAME = "transformWithStateInPySparkExec"
"""How Spark's state metadata names each `state.operator`."""
OPERATOR_NAMES = {"transformWithState": TWS_OPERATOR_NAME, "applyInPandasWithState": "applyInPandasWithState"}


class CheckpointError(Exception):
    """This release cannot run the query on the checkpoint as configured; the message says what to do."""


@dataclass(frozen=True)
class Checkpoint:
    location: str
    batch: int | None
    """The last committed batch (None: no batch committed yet)."""
    source_offset: dict | None
    """The source's end offset of that batch: where a new checkpoint continues from."""
    operator_name: str | None
    """Spark's name of the checkpoint's state operator (None: no state yet)."""

    @property
    def release_0_1(self) -> bool:
        """Made by release 0.1.0: its source offsets do not record `state.buckets`."""
        return self.source_offset is not None and "buckets" not in self.source_offset

    def starting_offsets(self, topic: str) -> str:
        """The `startingOffsets` JSON that continues right after the last committed batch on `topic`, which must
        be the requests topic the checkpoint read."""
        if self.source_offset is None:
            raise CheckpointError(f"checkpoint {self.location} has no committed batch to continue after")
        if topic not in self.source_offset:
            read = [k for k, v in self.source_offset.items() if isinstance(v, dict)]
            raise CheckpointError(f"checkpoint {self.location} read requests topic {', '.join(read)}, not {topic}")
        return json.dumps({t: offsets for t, offsets in self.source_offset.items()
                           if generation_of(topic, t) is not None})  # every generation (common.generations)


def inspect(spark: SparkSession, location: str) -> Checkpoint:
    files = _Files(spark, location)
    committed = [int(name) for name in files.list("commits") if name.isdigit()]
    if not committed:
        return Checkpoint(location, None, None, None)
    batch = max(committed)
    # An offset log entry: a version line, the batch's metadata, then one line per source.
    source_offset = json.loads(files.read(f"offsets/{batch}").splitlines()[2])
    operators = spark.read.format("state-metadata").load(location).collect() if files.list("state") else []
    return Checkpoint(location, batch, source_offset, operators[0].operatorName if operators else None)


def existing(spark: SparkSession, location: str) -> Checkpoint:
    """`inspect` of a checkpoint that must be there already (one to read, not one a query is about to start):
    CheckpointError when nothing is at `location`, or something that is no Spark checkpoint (no `metadata` file, which
    a query writes when it first starts)."""
    files = _Files(spark, location)
    if not files.exists(""):
        raise CheckpointError(f"checkpoint {location} does not exist")
    if not files.exists("metadata"):
        raise CheckpointError(f"{location} is not a Spark checkpoint: it has no metadata file")
    return inspect(spark, location)


def check(spark: SparkSession, props: Mapping[str, str]) -> Checkpoint:
    """The checkpoint of `props`, or CheckpointError when the query as configured cannot run on it."""
    from streaming.query import state_operator

    location = props["checkpoint.location"]
    found = inspect(spark, location)
    upgrade = (f"`coordinator upgrade --from {location} --checkpoint-location NEW_LOCATION` makes a checkpoint of "
               f"this release from it (or start a new one from the records topic with `coordinator run "
               f"--rebuild-from-records --checkpoint-location NEW_LOCATION`); see docs/operations.md, Upgrading")
    if found.release_0_1:
        raise CheckpointError(f"checkpoint {location} was made by release 0.1.0 (one state row per bucket of "
                              f"groups), which this release does not run on: {upgrade}")
    operator = state_operator(props)
    if found.operator_name is not None and found.operator_name != OPERATOR_NAMES[operator]:
        other = next(o for o, name in OPERATOR_NAMES.items() if name == found.operator_name)
        raise CheckpointError(f"checkpoint {location} keeps its groups with state.operator={other}, but the query "
                              f"runs with state.operator={operator}; the operator is fixed once a checkpoint exists: "
                              f"set it back to {other}, or {upgrade}")
    return found


class _Files:
    """Small files of a checkpoint, through Hadoop's FileSystem (what Spark itself reads checkpoints with)."""

    def __init__(self, spark: SparkSession, location: str) -> None:
        self._jvm = spark._jvm
        self._root = self._jvm.org.apache.hadoop.fs.Path(location)
        self._fs = self._root.getFileSystem(spark._jsc.hadoopConfiguration())

    def _path(self, relative: str):
        return self._jvm.org.apache.hadoop.fs.Path(self._root, relative) if relative else self._root

    def exists(self, relative: str) -> bool:
        return bool(self._fs.exists(self._path(relative)))

    def list(self, relative: str) -> list[str]:
        path = self._path(relative)
        if not self.exists(relative):
            return []
        return [status.getPath().getName() for status in self._fs.listStatus(path)]

    def read(self, relative: str) -> str:
        stream = self._fs.open(self._path(relative))
        try:
            return self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
