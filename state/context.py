"""What one handler call sees and produces: the group (or None), the time, the config, and the outputs.

`emit` is the only way durable state changes: it appends a record and replays it onto the group, exactly as a
load replays the records topic (Kafka's `CoordinatorResult(records, response)` followed by `replay(record)`).
What the records carry (offsets, the persisted group value, the directory entry) changes only here. The live
membership (members, generation, leader, parked requests) is updated in place by the handlers, as Kafka's Java
coordinator does for classic groups (their results are appended with `replayRecords=false`); the tests check
after every step that the records written so far rebuild the durable part.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.messages import GroupMetadataKey, Response
from state.config import CoordinatorConfig
from state.group import ClassicGroup
from state.records import Record, directory_of, group_record, kafka_group_value, offset_value_of, persisted_of
from state.timers import OFFSETS_EXPIRATION, next_retention_check


@dataclass
class Context:
    group_id: str
    group: ClassicGroup | None
    now_ms: int
    config: CoordinatorConfig
    responses: list[Response] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    members_expired: int = 0
    """Members (pending ones included) removed this call because a session or the sync deadline ran out."""
    fast_answers: list = field(default_factory=list)
    """Requests a gateway answered from the group's view, checked (`state.fast_answers.FastAnswer`)."""

    def respond(self, response: Response) -> None:
        self.responses.append(response)

    def emit(self, record: Record) -> None:
        self.records.append(record)
        self.group = replay(self.group, record)

    def create_group(self) -> ClassicGroup:
        """A new Empty group (generation 0), as Kafka's getOrMaybeCreateClassicGroup. Its first record (Java writes
        an empty GroupMetadata record for a group a JoinGroup creates) is written by the directory sync."""
        group = ClassicGroup(self.group_id, state_timestamp=self.now_ms)
        group.persisted = kafka_group_value(group)
        group.timers[OFFSETS_EXPIRATION] = next_retention_check(self.now_ms, self.config)
        self.group = group
        return group


def replay(group: ClassicGroup | None, record: Record) -> ClassicGroup | None:
    """Apply one record of this group to its in-memory state (a tombstone of the group metadata removes it)."""
    key, value = record.key, record.value
    if isinstance(key, GroupMetadataKey):
        if value is None:
            return None
        assert group is not None, "a group metadata record is written only for a live group"
        group.persisted = persisted_of(value)  # type: ignore[arg-type]
        group.directory = [value.directory.group_state, value.directory.protocol_type]
        return group
    assert group is not None, "an offset record is written only for a live group"
    tp = (key.topic, key.partition)
    if value is None:
        group.offsets.pop(tp, None)
    else:
        group.offsets[tp] = offset_value_of(value)
    return group


def sync_directory(ctx: Context) -> None:
    """Write a group metadata record when the state or protocol type changed since the last one, so the
    directory (ListGroups) follows every state change, not only those Kafka persists."""
    group = ctx.group
    if group is not None and group.directory != directory_of(group):
        ctx.emit(group_record(group))
