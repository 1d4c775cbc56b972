"""A consumer group's view (`kind: consumer`, `schemas.consumer_group.ConsumerGroupView`): what a gateway answers
steady heartbeats, commits and fetches from (`state.views.fast_answers`)."""

from __future__ import annotations

from msgspec import UnsetType

from schemas.consumer_group import ConsumerGroupView, ConsumerViewCommitter, ConsumerViewMember
from schemas.messages import ViewOffset, ViewPosition
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup
from state.consumer.heartbeat import heartbeat_interval_ms


def view_of(group: ConsumerGroup, config: CoordinatorConfig, waited_ms: int,
            offsets: tuple[ViewOffset, ...] | UnsetType, position: ViewPosition | UnsetType) -> ConsumerGroupView:
    """Members listed are those a heartbeat changes nothing for: reconciled to a target at the group epoch, and
    owing the coordinator no heartbeat (`HeartbeatOwed`); the heartbeat interval is the one the coordinator tells a
    heartbeat that waited `waited_ms` for its batch (`state.consumer.heartbeat.heartbeat_interval_ms`); every
    member's epoch and principal (`committers`), which its commits and fetches are checked against; the offsets
    and their position where `state.views.published.view_of` gives them."""
    answerable = group.group_epoch == group.assignment_epoch
    return ConsumerGroupView(
        group_epoch=group.group_epoch, heartbeat_interval_ms=heartbeat_interval_ms(config, waited_ms),
        session_timeout_ms=config.group_consumer_session_timeout_ms,
        members=tuple(ConsumerViewMember(m.member_id, m.instance_id, m.member_epoch, m.principal)
                      for member_id, m in sorted(group.members.items())
                      if answerable and m.is_reconciled_to(group.assignment_epoch)
                      and member_id not in group.heartbeat_owed),
        committers=tuple(ConsumerViewCommitter(member_id, m.member_epoch, m.uses_classic_protocol, m.principal)
                         for member_id, m in sorted(group.members.items())),
        offsets=offsets, position=position)
