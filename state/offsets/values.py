"""A group's committed offsets, of either kind of group: the values, and the map that reads them on first use.

Kafka keeps offsets apart from groups (its OffsetMetadataManager beside the GroupMetadataManager); so does the core:
a group holds an `Offsets`, stored in a row of its own (`state.batch`), and changed only by replaying offset
records (`state.runtime.context.replay`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass


@dataclass(slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None


TopicPartition = tuple[str, int]
StoredOffset = tuple[str, int, int, int, str, int, int | None]
"""(topic, partition, offset, leader_epoch, metadata, commit_timestamp, expire_timestamp), as stored."""


class Offsets(MutableMapping[TopicPartition, OffsetValue]):
    """A group's committed offsets: stored apart from the rest of the group and read only when a step uses them.

    Most requests (heartbeats, joins, syncs) never look at offsets, so a shell that keeps them in a row of their
    own passes a reader instead of the offsets (`state.batch.step_group`'s `read_offsets`), and the row is read
    the first time anything here is touched. `changed` says whether the offsets must be written back.
    """

    __slots__ = ("_values", "_read", "changed")

    def __init__(self, values: dict[TopicPartition, OffsetValue] | None = None,
                 read: Callable[[], dict[TopicPartition, OffsetValue]] | None = None) -> None:
        self._values = values if values is not None or read is not None else {}
        self._read = read
        self.changed = False

    @property
    def loaded(self) -> bool:
        return self._values is not None

    def _all(self) -> dict[TopicPartition, OffsetValue]:
        if self._values is None:
            self._values = self._read()  # type: ignore[misc]
        return self._values

    def __getitem__(self, tp: TopicPartition) -> OffsetValue:
        return self._all()[tp]

    def get(self, tp: TopicPartition, default: OffsetValue | None = None) -> OffsetValue | None:  # type: ignore[override]
        return self._all().get(tp, default)

    def __contains__(self, tp: object) -> bool:
        return tp in self._all()

    def __setitem__(self, tp: TopicPartition, value: OffsetValue) -> None:
        self._all()[tp] = value
        self.changed = True

    def __delitem__(self, tp: TopicPartition) -> None:
        del self._all()[tp]
        self.changed = True

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"Offsets({self._all()!r})"

    def to_doc(self) -> list[StoredOffset]:
        return [(t, p, o.offset, o.leader_epoch, o.metadata, o.commit_timestamp, o.expire_timestamp)
                for (t, p), o in sorted(self._all().items())]

    @staticmethod
    def values_from_doc(doc: list[StoredOffset]) -> dict[TopicPartition, OffsetValue]:
        return {(t, p): OffsetValue(o, e, md, c, x) for t, p, o, e, md, c, x in doc}
