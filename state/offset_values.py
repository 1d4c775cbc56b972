"""A group's committed offsets, of either kind of group: the values, and the map that reads them on first use.

Kafka keeps offsets apart from groups (its OffsetMetadataManager beside the GroupMetadataManager); so does the core:
a group holds an `Offsets`, stored in a row of its own (`state.batch`), and changed only by replaying offset
records (`state.runtime.replay.replay`). Beside the committed offsets, the pending transactional ones (Kafka's
pendingTransactionalOffsets): by producer id, what a TxnOffsetCommit wrote and its transaction's marker has not yet
committed or aborted.
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


@dataclass(slots=True)
class PendingOffset:
    """A transactional offset waiting for its transaction's end. `superseded`: a plain commit of the same partition
    came after it (Kafka compares the two records' log offsets): its COMMIT then leaves the plain one in place."""

    value: OffsetValue
    superseded: bool = False


TopicPartition = tuple[str, int]
PendingKey = tuple[int, str, int]
"""(producer id, topic, partition)."""
StoredPending = tuple[int, str, int, int, int, str, int, bool]
"""(producer id, topic, partition, offset, leader_epoch, metadata, commit_timestamp, superseded), as stored."""
StoredOffset = tuple[str, int, int, int, str, int, int | None]
"""(topic, partition, offset, leader_epoch, metadata, commit_timestamp, expire_timestamp), as stored."""


class Offsets(MutableMapping[TopicPartition, OffsetValue]):
    """A group's committed offsets: stored apart from the rest of the group and read only when a step uses them.

    Most requests (heartbeats, joins, syncs) never look at offsets, so a shell that keeps them in a row of their
    own passes a reader instead of the offsets (`state.batch.step_group`'s `read_offsets`), and the row is read
    the first time anything here is touched. `changed` says whether the offsets must be written back.
    """

    __slots__ = ("_values", "_pending", "_read", "changed")

    def __init__(self, values: dict[TopicPartition, OffsetValue] | None = None,
                 read: Callable[[], tuple[dict[TopicPartition, OffsetValue], dict[PendingKey, PendingOffset]]]
                 | None = None, pending: dict[PendingKey, PendingOffset] | None = None) -> None:
        self._values = values if values is not None or read is not None else {}
        self._pending = pending if pending is not None else {}
        self._read = read
        self.changed = False

    @property
    def loaded(self) -> bool:
        return self._values is not None

    def _all(self) -> dict[TopicPartition, OffsetValue]:
        if self._values is None:
            self._values, self._pending = self._read()  # type: ignore[misc]
        return self._values

    @property
    def pending(self) -> dict[PendingKey, PendingOffset]:
        """The pending transactional offsets; change them only with `set_pending` and `drop_pending` (replay)."""
        self._all()
        return self._pending

    def set_pending(self, key: PendingKey, value: PendingOffset) -> None:
        self.pending[key] = value
        self.changed = True

    def drop_pending(self, key: PendingKey) -> None:
        if self.pending.pop(key, None) is not None:
            self.changed = True

    def pending_of(self, producer_id: int) -> list[tuple[TopicPartition, PendingOffset]]:
        """The producer's pending offsets, by topic and partition."""
        return sorted(((t, p), v) for (pid, t, p), v in self.pending.items() if pid == producer_id)

    def has_pending(self, tp: TopicPartition) -> bool:
        """Kafka's hasPendingTransactionalOffsets: some open transaction holds an offset of this partition."""
        return any((t, p) == tp for _, t, p in self.pending)

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

    def pending_to_doc(self) -> list[StoredPending]:
        return [(pid, t, p, v.value.offset, v.value.leader_epoch, v.value.metadata, v.value.commit_timestamp,
                 v.superseded) for (pid, t, p), v in sorted(self.pending.items())]

    @staticmethod
    def pending_from_doc(doc: list[StoredPending]) -> dict[PendingKey, PendingOffset]:
        return {(pid, t, p): PendingOffset(OffsetValue(o, e, md, c, None), s) for pid, t, p, o, e, md, c, s in doc}
