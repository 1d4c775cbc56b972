"""The group directory: ListGroups answered from the records topic, since no single group's state can.

Fed every records-topic record (`apply`), it keeps the `directory` part of the latest group metadata record per
group (state and protocol type, written on every state change); a tombstone removes the group. A consumer group's
is its group-epoch record's `directory` (its state, written on every state change; the epoch bumps Kafka writes
carry none and change nothing here); its protocol type and group type are `consumer` (Kafka's ModernGroup
.asListedGroup). A share group's likewise, with `share` for both.
"""

from __future__ import annotations

import msgspec

from schemas.consumer_group import ConsumerGroupDirectoryEntry, ConsumerGroupMetadataKey
from schemas.messages import GroupDirectoryEntry, GroupMetadataKey, ListedGroup, ListGroupsRequest
from state.consumer.group import ConsumerGroupState
from state.errors import NONE
from state.classic.group import GroupState
from state.records import decode_key
from schemas.share_group import ShareGroupDirectoryEntry, ShareGroupMetadataKey
from state.wire import BadRequest, decode_request, encode, error_response, readable_request_id, simple_response


class _Directory(msgspec.Struct):
    """The part of a group metadata value the directory reads; msgspec skips the rest."""

    directory: GroupDirectoryEntry


class _ConsumerDirectory(msgspec.Struct):
    """The part of a consumer group's group-epoch value the directory reads."""

    directory: ConsumerGroupDirectoryEntry | None = None


class _ShareDirectory(msgspec.Struct):
    """The part of a share group's group-epoch value the directory reads."""

    directory: ShareGroupDirectoryEntry | None = None


_DIRECTORY = msgspec.json.Decoder(_Directory)
_SHARE_DIRECTORY = msgspec.json.Decoder(_ShareDirectory)
SHARE = "share"
"""A share group's protocol type and group type in ListGroups (Kafka's ShareGroup.asListedGroup)."""
_CONSUMER_DIRECTORY = msgspec.json.Decoder(_ConsumerDirectory)
CONSUMER = "consumer"
"""A consumer group's protocol type and group type in ListGroups."""


class GroupDirectory:
    def __init__(self) -> None:
        self._groups: dict[str, tuple[str, str, str]] = {}
        """group id -> (state, protocol type, group type)."""

    def apply(self, key: bytes, value: bytes | None) -> None:
        """Take one records-topic record; records that are not group metadata, or unreadable, are ignored."""
        try:
            k = decode_key(key)
        except msgspec.DecodeError:
            return
        self.apply_keyed(k, value)

    def apply_keyed(self, k: object, value: bytes | None) -> None:
        """`apply` with the key decoded already (by a reader that looks at it too: the driver's group watch)."""
        try:
            if isinstance(k, GroupMetadataKey):
                if value is None:
                    self._groups.pop(k.group, None)
                    return
                directory = _DIRECTORY.decode(value).directory
                self._groups[k.group] = (directory.group_state, directory.protocol_type, "classic")
            elif isinstance(k, ConsumerGroupMetadataKey):
                if value is None:
                    self._groups.pop(k.group_id, None)
                    return
                entry = _CONSUMER_DIRECTORY.decode(value).directory
                if entry is not None:
                    self._groups[k.group_id] = (entry.group_state, CONSUMER, CONSUMER)
            elif isinstance(k, ShareGroupMetadataKey):
                if value is None:
                    self._groups.pop(k.group_id, None)
                    return
                share_entry = _SHARE_DIRECTORY.decode(value).directory
                if share_entry is not None:
                    self._groups[k.group_id] = (share_entry.group_state, SHARE, SHARE)
        except msgspec.DecodeError:
            return

    def count_by_state(self) -> dict[str, int]:
        """How many groups are in each state (every state, zeros included), for the per-batch metrics."""
        counts = dict.fromkeys((s.value for s in GroupState), 0)
        counts.update(dict.fromkeys((s.value for s in ConsumerGroupState), 0))
        for state, _, _ in self._groups.values():
            counts[state] += 1
        return counts

    def answer(self, raw_request: bytes) -> bytes:
        """The ListGroups response: groups sorted by id, filtered by state and type (case-insensitive, KIP-518 and
        KIP-848; an unknown type matches nothing)."""
        try:
            req = decode_request(raw_request)
            if not isinstance(req, ListGroupsRequest):
                raise BadRequest(f"{req.api} is not answered by the group directory", body={"request_id": req.request_id})
        except BadRequest as exc:
            request_id = "" if exc.body is None else readable_request_id(exc.body) or ""
            return encode(error_response("ListGroups", request_id, None, exc.code, exc.reason))
        states = {s.lower() for s in req.states_filter}
        types = {t.lower() for t in req.types_filter}
        groups = []
        for group_id in sorted(self._groups):
            state, protocol_type, group_type = self._groups[group_id]
            if (not states or state.lower() in states) and (not types or group_type in types):
                groups.append(ListedGroup(group_id, protocol_type, state, group_type))  # type: ignore[arg-type]
        return encode(simple_response(req, NONE, groups=tuple(groups)))
