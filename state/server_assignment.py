"""Our extension: server-side assignment for classic consumer groups (protocol `server:<assignor>`).

When the group selects `server:uniform` or `server:range`, the coordinator runs that assignor at join
completion instead of waiting for the leader's SyncGroup. Inputs: each member's ConsumerProtocol subscription
(the metadata of the selected protocol) and the partition counts members reported in JoinGroup's
`topic_partitions` (the largest count per topic wins: a member that saw a newer metadata knows more partitions).
"""

from __future__ import annotations

import base64

from assignors.api import Cluster, MemberSubscription
from assignors.consumer_protocol import Assignment, decode_subscription, encode_assignment
from state.group import ClassicGroup

SERVER_PREFIX = "server:"


def is_server_protocol(protocol: str) -> bool:
    return protocol.startswith(SERVER_PREFIX)


def compute(group: ClassicGroup, protocol: str) -> tuple[dict[str, str] | None, str]:
    """member id -> base64 ConsumerProtocolAssignment, or (None, why) when the assignor is missing or fails;
    the caller turns that into an error code, never an exception."""
    name = protocol[len(SERVER_PREFIX):]
    try:
        from assignors import registry  # lazily: the assignors package is optional for everything else

        assignor = registry.get(name, kind="server")
    except Exception as exc:  # noqa: BLE001 - any failure to find the assignor is reported, not raised
        return None, f"server assignor {name!r} is not available: {exc}"
    members = []
    counts: dict[str, int] = {}
    for m in group.members.values():
        try:
            sub = decode_subscription(base64.b64decode(m.metadata(protocol)))
        except Exception as exc:  # noqa: BLE001
            return None, f"subscription of {m.member_id} cannot be decoded: {exc}"
        members.append(MemberSubscription(
            m.member_id, sub.topics, m.group_instance_id, sub.owned_partitions, sub.generation_id, sub.rack_id,
            sub.user_data,
        ))
        for topic, count in m.topic_partitions:
            counts[topic] = max(counts.get(topic, 0), count)
    try:
        result = assignor.assign(Cluster(dict(sorted(counts.items()))), members)
        return {
            member_id: base64.b64encode(encode_assignment(Assignment(
                tuple((topic, tuple(parts)) for topic, parts in partitions)
            ))).decode()
            for member_id, partitions in result.items()
        }, ""
    except Exception as exc:  # noqa: BLE001 - a failing assignor must not take the group down
        return None, f"server assignor {name!r} failed: {exc}"
