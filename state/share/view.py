"""A share group's view (`kind: share`, `schemas.share_group.ShareGroupView`): what a gateway answers steady
heartbeats from, as a consumer group's, and where it finds which gateway holds each share-partition and the settings
its holders apply."""

from __future__ import annotations

from schemas.share_group import ShareGroupView, ShareViewConfig, ShareViewGrant, ShareViewMember
from state.share.configs import ShareSettings
from state.share.group import ShareGroup


def view_of(group: ShareGroup, settings: ShareSettings) -> ShareGroupView:
    """Members listed are those a heartbeat changes nothing for: reconciled to a target at the group epoch, and
    owing the coordinator no heartbeat; every share-partition with a grant, and who waits for it."""
    answerable = group.group_epoch == group.assignment_epoch
    return ShareGroupView(
        group_epoch=group.group_epoch, heartbeat_interval_ms=settings.heartbeat_interval_ms,
        session_timeout_ms=settings.session_timeout_ms,
        members=tuple(ShareViewMember(m.member_id, m.member_epoch, m.principal)
                      for member_id, m in sorted(group.members.items())
                      if answerable and m.is_reconciled_to(group.assignment_epoch)
                      and member_id not in group.heartbeat_owed),
        grants=tuple(ShareViewGrant(t, p, s.grant.epoch, s.grant.holder, group.wanted.get((t, p)),
                                    s.persisted.state_epoch)
                     for (t, p), s in sorted(group.partitions.items())),
        config=holder_config(settings))


def holder_config(settings: ShareSettings) -> ShareViewConfig:
    """The settings a holder applies to the group's share-partitions (in the view, and in a granted take's or
    renewal's answer)."""
    return ShareViewConfig(settings.auto_offset_reset, settings.record_lock_duration_ms,
                           settings.delivery_count_limit, settings.partition_max_record_locks,
                           settings.isolation_level)
