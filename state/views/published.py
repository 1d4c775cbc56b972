"""A group's published view and the completeness marks: what a gateway answers heartbeats and commits from.

`view_of` is the one derivation of a view from a group (of either kind: a consumer group's is a
`ConsumerGroupView`, decoded into a `PublishedConsumerGroup`); the coordinator publishes it after each step that
changed it (`state.batch.GroupStep.view`), on the views topic keyed by group id, and a tombstone when the group is
deleted. A gateway decodes a classic group's view into a `PublishedGroup`, which the rules of `state.rules` read
exactly as they read the group itself. The shell writes `ViewMark`s into every partition of the views topic after
the views of the batches they cover (`encode_mark`), under `MARK_KEY`, which no group id can have (it is not
UTF-8).
"""

from __future__ import annotations

from typing import Mapping

import msgspec
from msgspec import UNSET, UnsetType

from schemas.consumer_group import ConsumerGroupView
from schemas.messages import GroupView, ViewMark, ViewMember, ViewOffset, ViewPosition
from schemas.share_group import ShareGroupView
from state.classic.view import view_of as classic_view_of
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup
from state.consumer.view import view_of as consumer_view_of
from state.share.configs import ShareSettings
from state.share.group import ShareGroup
from state.share.view import view_of as share_view_of
from state.wire import encode

MARK_KEY = b"\xffmark"
"""The views topic's key of the completeness marks: not UTF-8, so never a group id."""

_VIEW = msgspec.json.Decoder(GroupView)
_MARK = msgspec.json.Decoder(ViewMark)


def view_of(group, config: CoordinatorConfig, position: tuple[int, int] | None = None,
            waited_ms: int = 0, group_configs: Mapping[str, str] | None = None
            ) -> GroupView | ConsumerGroupView | ShareGroupView | None:
    """The view of a group (None: no group), by its kind's `view_of` (`state.classic.view`, `state.consumer.view`,
    `state.share.view`). A classic or consumer group's view carries the group's offsets when `position` is given:
    the requests-topic (partition, offset) of the last request the step applied, given where the group's offsets
    answer an OffsetFetch (`state.batch`), as of that request. `waited_ms`: the longest wait of the call that
    publishes it, for the heartbeat interval a consumer group's view tells
    (`state.consumer.heartbeat.heartbeat_interval_ms`)."""
    if group is None:
        return None
    if isinstance(group, ShareGroup):
        return share_view_of(group, ShareSettings.of(group_configs or {}, config))
    offsets: tuple[ViewOffset, ...] | UnsetType = UNSET
    at: ViewPosition | UnsetType = UNSET
    if position is not None:
        offsets = tuple(ViewOffset(t, p, o.offset, o.leader_epoch, o.metadata)
                        for (t, p), o in sorted(group.offsets.items()))
        at = ViewPosition(*position)
    if isinstance(group, ConsumerGroup):
        return consumer_view_of(group, config, waited_ms, offsets, at)
    return classic_view_of(group, offsets, at)


def encode_view(view: GroupView | ConsumerGroupView | ShareGroupView | None) -> bytes | None:
    """The views topic's value of a view (None: the group's tombstone)."""
    return None if view is None else encode(view)


class PublishedGroup:
    """A decoded view, with the lookups the rules read (`state.rules.Membership`)."""

    __slots__ = ("state", "generation", "protocol_type", "protocol_name", "leader", "members", "static_members",
                 "offsets", "position")

    def __init__(self, view: GroupView) -> None:
        self.state = view.group_state
        self.generation = view.generation
        self.protocol_type = view.protocol_type
        self.protocol_name = view.protocol_name
        self.leader = view.leader
        self.members: dict[str, ViewMember] = {m.member_id: m for m in view.members}
        self.static_members = {m.group_instance_id: m.member_id for m in view.members
                               if m.group_instance_id is not None}
        self.offsets = None if view.offsets is UNSET else {(o.topic, o.partition): o for o in view.offsets}
        self.position = None if view.position is UNSET else view.position

    def min_session_timeout_ms(self) -> int | None:
        return min((m.session_timeout_ms for m in self.members.values()), default=None)


class PublishedConsumerGroup:
    """A decoded consumer group's view: the members whose heartbeats a gateway may answer, by member id; every
    member as commits and fetches are checked (`committers`, None in a view of an older release); the offsets and
    `position` where it carries them."""

    __slots__ = ("group_epoch", "heartbeat_interval_ms", "session_timeout_ms", "members", "committers", "offsets",
                 "position")

    def __init__(self, view: ConsumerGroupView) -> None:
        self.group_epoch = view.group_epoch
        self.heartbeat_interval_ms = view.heartbeat_interval_ms
        self.session_timeout_ms = view.session_timeout_ms
        self.members = {m.member_id: m for m in view.members}
        self.committers = None if view.committers is UNSET else {m.member_id: m for m in view.committers}
        self.offsets = None if view.offsets is UNSET else {(o.topic, o.partition): o for o in view.offsets}
        self.position = None if view.position is UNSET else view.position

    def min_session_timeout_ms(self) -> int | None:
        return self.session_timeout_ms


class PublishedShareGroup:
    """A decoded share group's view: the members whose heartbeats a gateway may answer, the grants of its
    share-partitions by (topic id, partition), and the settings its holders apply."""

    __slots__ = ("group_epoch", "heartbeat_interval_ms", "session_timeout_ms", "members", "grants", "config")
    kind = "share"
    """As the encoded view says: how a gateway tells a share group's view from the other kinds'."""

    def __init__(self, view: ShareGroupView) -> None:
        self.group_epoch = view.group_epoch
        self.heartbeat_interval_ms = view.heartbeat_interval_ms
        self.session_timeout_ms = view.session_timeout_ms
        self.members = {m.member_id: m for m in view.members}
        self.grants = {(g.topic_id, g.partition): g for g in view.grants}
        self.config = view.config

    def min_session_timeout_ms(self) -> int | None:
        return self.session_timeout_ms


PublishedView = PublishedGroup | PublishedConsumerGroup | PublishedShareGroup
"""A decoded view of either kind of group."""


class _Kind(msgspec.Struct):
    kind: str = "classic"


_KIND = msgspec.json.Decoder(_Kind)
_CONSUMER_VIEW = msgspec.json.Decoder(ConsumerGroupView)
_SHARE_VIEW = msgspec.json.Decoder(ShareGroupView)


def decode_view(raw: bytes) -> PublishedView:
    """A views-topic value; msgspec.DecodeError when it is not a view."""
    kind = _KIND.decode(raw).kind
    if kind == "consumer":
        return PublishedConsumerGroup(_CONSUMER_VIEW.decode(raw))
    if kind == "share":
        return PublishedShareGroup(_SHARE_VIEW.decode(raw))
    return PublishedGroup(_VIEW.decode(raw))


def encode_mark(requests_topic: str, positions: Mapping[int, int], time_ms: int) -> bytes:
    return encode(ViewMark(requests_topic, {str(p): o for p, o in sorted(positions.items())}, time_ms))


def decode_mark(raw: bytes) -> ViewMark:
    """A mark's value; msgspec.DecodeError when it is not one."""
    return _MARK.decode(raw)
