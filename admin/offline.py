"""`--checkpoint PATH`: the tool's questions answered from a stopped query's checkpoint instead of the coordinator.

The groups are read with Spark's state data source (`streaming.group_stores.state_reader`), and each request the tool
would send over the control topic is answered by the core's own handlers on them (`state.offline`), so the answers are
the ones the running coordinator gave when it stopped. Only the read-only questions (--list, --describe) can be
asked of a checkpoint. A checkpoint also answers what no request asks: a share group's durable share-partition
state, batch by batch (`share_partition_states`, `groupcoord-share-groups --describe --state-batches`).
"""

from __future__ import annotations

import json
from typing import Mapping

from client.protocol import Json
from state.api import TRANSACTIONS_GROUP
from state.batch import TOPIC_METADATA_GROUP, StoredGroup
from state.offline import SharePartitionState, answer, list_groups, share_partition_states


class CheckpointTransport:
    """A `client.transport.Transport` over the stored groups of a checkpoint."""

    def __init__(self, groups: Mapping[str, StoredGroup]) -> None:
        topics = groups.get(TOPIC_METADATA_GROUP)
        self._topics = None if topics is None else topics.metadata
        """The cluster's topics as the stopped query last saw them: what names a consumer group's topics."""
        # the rows of a bucket's topics and of its open transactions (producer id -> groups) are no groups
        self._groups = {g: stored for g, stored in groups.items()
                        if g not in (TOPIC_METADATA_GROUP, TRANSACTIONS_GROUP)}
        self._ids = 0

    @classmethod
    def read(cls, location: str, group_ids: list[str] | None) -> "CheckpointTransport":
        """The groups of the checkpoint at `location` (all of them, or only `group_ids`), read with this process's
        SparkSession, or a local one started for it."""
        from pyspark.sql import SparkSession

        from common.config import DEFAULT_SPARK_DEFAULTS, read_spark_defaults
        from streaming.group_stores.state_reader import stored_groups
        from streaming.query import spark_session

        spark = SparkSession.getActiveSession()
        own = spark is None
        if own:
            spark = spark_session({**read_spark_defaults(DEFAULT_SPARK_DEFAULTS),
                                   "spark.app.name": "groupcoord-consumer-groups"})
        try:
            wanted = None if group_ids is None else [*group_ids, TOPIC_METADATA_GROUP]
            return cls(stored_groups(spark, location, wanted))
        finally:
            if own:
                spark.stop()

    def request(self, key: str, body: Json, timeout_s: float, attempts: int = 1) -> Json:
        self._ids += 1
        raw = json.dumps({**body, "request_id": f"offline-{self._ids}"}).encode()
        if body.get("api") == "ListGroups":
            return json.loads(list_groups(self._groups.items(), raw))
        return json.loads(answer(key, self._groups.get(key), raw, topics=self._topics))

    def share_partition_states(self, group_id: str) -> list[SharePartitionState] | None:
        """The group's share-partitions' durable state (None: no share group of that id)."""
        return share_partition_states(self._groups.get(group_id))

    def close(self) -> None:
        pass
