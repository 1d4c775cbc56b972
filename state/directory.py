"""The group directory: ListGroups answered from the records topic, since no single group's state can.

Fed every records-topic record (`apply`), it keeps the `directory` part of the latest group metadata record per
group (state and protocol type, written on every state change); a tombstone removes the group.
"""

from __future__ import annotations

import json

from state.errors import NONE
from state.group import GroupState
from state.records import GROUP_METADATA_KEY_VERSION, dumps
from state.wire import BadRequest, decode_json, error_response, parse, readable_request_id, simple_response


class GroupDirectory:
    def __init__(self) -> None:
        self._groups: dict[str, tuple[str, str]] = {}

    def apply(self, key: bytes, value: bytes | None) -> None:
        """Take one records-topic record; records that are not group metadata, or unreadable, are ignored."""
        try:
            k = json.loads(key)
            if k.get("version") != GROUP_METADATA_KEY_VERSION or not isinstance(k.get("group"), str):
                return
            if value is None:
                self._groups.pop(k["group"], None)
                return
            directory = json.loads(value)["directory"]
            self._groups[k["group"]] = (directory["group_state"], directory["protocol_type"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return

    def count_by_state(self) -> dict[str, int]:
        """How many groups are in each state (every state, zeros included), for the per-batch metrics."""
        counts = dict.fromkeys((s.value for s in GroupState), 0)
        for state, _ in self._groups.values():
            counts[state] = counts.get(state, 0) + 1
        return counts

    def answer(self, raw_request: bytes) -> bytes:
        """The ListGroups response: groups sorted by id, filtered by state and type (case-insensitive, KIP-518);
        every group here is `classic`, so a type filter without it matches nothing."""
        try:
            body = decode_json(raw_request)
        except BadRequest as exc:
            return dumps(error_response("ListGroups", "", None, exc.code, exc.reason))
        try:
            req = parse(body)
        except BadRequest as exc:
            return dumps(error_response("ListGroups", readable_request_id(body) or "", None, exc.code, exc.reason))
        states = {s.lower() for s in req["states_filter"]}
        types = {t.lower() for t in req["types_filter"]}
        groups = []
        if not types or "classic" in types:
            for group_id in sorted(self._groups):
                state, protocol_type = self._groups[group_id]
                if not states or state.lower() in states:
                    groups.append({"group_id": group_id, "protocol_type": protocol_type, "group_state": state,
                                   "group_type": "classic"})
        return dumps(simple_response(req, NONE, groups=groups))
