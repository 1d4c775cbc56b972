"""What the consumer-group tests share: topic ids, assignments written as Kafka's tests write them, and the test
assignors (Kafka's MockPartitionAssignor: it hands back a prepared assignment and remembers what it was given)."""

from __future__ import annotations

from typing import Mapping

from assignors.api import Cluster, GroupSpec, PartitionAssignorError
from assignors.consumer_protocol import TopicPartitions
from state.topics.image import MetadataImage, TopicImage, kafka_uuid


def topic_id(name: str) -> str:
    """A fixed Kafka Uuid per topic name (Kafka's tests draw random ones)."""
    return kafka_uuid(f"topic:{name}")


def image(*topics: tuple[str, int], version: int = 1, new_topics_version: int = -1) -> MetadataImage:
    return MetadataImage.of(version, [TopicImage(topic_id(n), n, p) for n, p in topics], new_topics_version)


def assignment(*topics: tuple[str, tuple[int, ...]]) -> dict[str, frozenset[int]]:
    """Kafka's mkAssignment(mkTopicAssignment(id, partitions...), ...), by topic name."""
    return {topic_id(name): frozenset(parts) for name, parts in topics}


def epochs(epoch: int, *topics: tuple[str, tuple[int, ...]]) -> dict[str, dict[int, int]]:
    """The same partitions, all assigned at `epoch` (a member's assigned partitions)."""
    return {topic_id(name): dict.fromkeys(sorted(parts), epoch) for name, parts in topics}


class MockAssignor:
    """Kafka's MockPartitionAssignor: returns the prepared assignment (by topic id) whatever it is given."""

    def __init__(self, name: str = "range") -> None:
        self.name = name
        self.prepared: Mapping[str, Mapping[str, frozenset[int]]] = {}
        self.calls: list[tuple[Cluster, GroupSpec]] = []
        self.fail: str | None = None

    def prepare(self, members: Mapping[str, Mapping[str, frozenset[int]]]) -> None:
        self.prepared = members

    def assign_group(self, cluster: Cluster, group: GroupSpec) -> dict[str, TopicPartitions]:
        self.calls.append((cluster, group))
        if self.fail is not None:
            raise PartitionAssignorError(self.fail)
        names = {i: n for n, i in cluster.topic_ids.items()}
        return {member_id: tuple(sorted((names.get(t, t), tuple(sorted(p))) for t, p in parts.items()))
                for member_id, parts in self.prepared.items()}
