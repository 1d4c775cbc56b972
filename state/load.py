"""Rebuild a group from its records, as Kafka loads `__consumer_offsets` when it becomes coordinator.

Only Kafka's part of the group metadata record counts: the group comes back Stable (with its members and
assignments) or Empty, whatever state the `directory` part names; every member gets a fresh session timer; a
group above `group.max.size` rebalances. Offsets are the latest record per partition.
"""

from __future__ import annotations

from typing import Iterable

import msgspec
from msgspec import UNSET

from schemas.messages import GroupMetadataKey, GroupMetadataRecord, OffsetCommitKey, OffsetCommitValue
from state.config import CoordinatorConfig
from state.context import Context
from state.group import ClassicGroup, GroupState, Member, Offsets
from state.membership import prepare_rebalance, reschedule_heartbeat
from state.records import decode_key, offset_value_of, persisted_of

_GROUP_VALUE = msgspec.json.Decoder(GroupMetadataRecord)
_OFFSET_VALUE = msgspec.json.Decoder(OffsetCommitValue)
from state.timers import OFFSETS_EXPIRATION, next_retention_check


def load(group_id: str, records: Iterable[tuple[bytes, bytes | None]], now_ms: int,
         config: CoordinatorConfig) -> ClassicGroup | None:
    """The group as the records leave it; records of other groups and unreadable records are skipped."""
    metadata: GroupMetadataRecord | None = None
    offsets = {}
    for raw_key, raw_value in records:
        try:
            key = decode_key(raw_key)
            if key.group != group_id:
                continue
            if isinstance(key, GroupMetadataKey):
                metadata = None if raw_value is None else _GROUP_VALUE.decode(raw_value)
            elif isinstance(key, OffsetCommitKey):
                tp = (key.topic, key.partition)
                if raw_value is None:
                    offsets.pop(tp, None)
                else:
                    offsets[tp] = offset_value_of(_OFFSET_VALUE.decode(raw_value))
        except msgspec.DecodeError:
            continue
    if metadata is None and not offsets:
        return None
    ctx = Context(group_id, None, now_ms, config)
    group = ctx.create_group()
    group.offsets = Offsets(offsets)
    if metadata is not None:
        _restore(ctx, group, metadata)
    return ctx.group


def _restore(ctx: Context, group: ClassicGroup, value: GroupMetadataRecord) -> None:
    group.generation = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.state_timestamp = value.current_state_timestamp
    for m in value.members:
        member = Member(
            m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout,
            m.session_timeout, group.protocol_type or "", [(group.protocol_name or "", m.subscription)],
            m.assignment, principal=None if m.principal is UNSET else m.principal,
        )
        group.add(member)
        reschedule_heartbeat(ctx, group, member)
    group.protocol_type = value.protocol_type or None
    group.leader = value.leader if value.leader in group.members else next(iter(group.members), None)
    group.persisted = persisted_of(value)
    group.directory = [value.directory.group_state, value.directory.protocol_type]
    if group.members:
        group.state = GroupState.STABLE
        group.previous_state = GroupState.COMPLETING_REBALANCE
    group.subscribed_topics = group.compute_subscribed_topics()
    group.timers[OFFSETS_EXPIRATION] = next_retention_check(ctx.now_ms, ctx.config)
    if len(group.members) > ctx.config.group_max_size:
        prepare_rebalance(ctx, group)
