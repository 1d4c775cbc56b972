"""Our extension: server-side assignment for classic consumer groups (protocol `server:<assignor>`).

When the group selects `server:uniform` or `server:range`, the coordinator runs that assignor at join
completion instead of waiting for the leader's SyncGroup. Inputs: each member's ConsumerProtocol subscription
(the metadata of the selected protocol) and the partition counts members reported in JoinGroup's
`topic_partitions` (the largest count per topic wins: a member that saw a newer metadata knows more partitions).
Those counts are the coordinator's topic metadata.

What Kafka 4.x's coordinator does on the same path (GroupMetadataManager.classicGroupJoinToConsumerGroup, which
computes a consumer group's target assignment with a server-side assignor), and so what we do:
- The group's subscription type comes from the topic names members subscribe to (ModernGroup.subscriptionType:
  homogeneous when every name has every member as a subscriber).
- Names are then resolved against the topic metadata and a name it does not have is left out
  (TargetAssignmentBuilder's TopicIds): subscribing to a topic that does not exist (yet) is no error, the member
  simply gets nothing of it.
- The assignor's PartitionAssignorException becomes UnknownServerException("Failed to compute a new target
  assignment for epoch N: ..."), answered as UNKNOWN_SERVER_ERROR. In Kafka it surfaces when the group's cached
  subscription metadata lags the topics image, so the assignor meets a topic id it has no partition count for;
  our coordinator has one view of the topics, so it takes an assignor failure of that kind to get there.
- Members are given to the assignor in ascending member id order (Kafka's own assignor tests' order; a broker
  visits them in its HashMap order of member ids, which has no counterpart here).
"""

from __future__ import annotations

import base64

from assignors.api import Cluster, GroupSpec, MemberSubscription, PartitionAssignorError, SubscriptionType
from assignors.consumer_protocol import Assignment, decode_subscription, encode_assignment
from state.errors import NONE, UNKNOWN_SERVER_ERROR, UNSUPPORTED_ASSIGNOR, Errors
from state.classic.group import ClassicGroup

SERVER_PREFIX = "server:"


def is_server_protocol(protocol: str) -> bool:
    return protocol.startswith(SERVER_PREFIX)


def subscription_type(subscriptions: list[tuple[str, ...]]) -> SubscriptionType:
    """Kafka's ModernGroup.subscriptionType, over the names members subscribe to (before resolving them)."""
    subscribers: dict[str, int] = {}
    for topics in subscriptions:
        for topic in set(topics):
            subscribers[topic] = subscribers.get(topic, 0) + 1
    homogeneous = all(n == len(subscriptions) for n in subscribers.values())
    return SubscriptionType.HOMOGENEOUS if homogeneous else SubscriptionType.HETEROGENEOUS


def compute(group: ClassicGroup, protocol: str) -> tuple[dict[str, str] | None, Errors, str]:
    """(member id -> base64 ConsumerProtocolAssignment, NONE, "") or (None, error code, why) when the assignor is
    missing or fails; the caller turns that into the JoinGroup error, never an exception."""
    name = protocol[len(SERVER_PREFIX):]
    try:
        from assignors import registry  # lazily: the assignors package is optional for everything else

        assignor = registry.get(name, kind="server")
    except Exception as exc:  # noqa: BLE001 - any failure to find the assignor is reported, not raised
        return None, UNSUPPORTED_ASSIGNOR, f"server assignor {name!r} is not available: {exc}"
    subscriptions = []
    counts: dict[str, int] = {}
    for m in sorted(group.members.values(), key=lambda m: m.member_id):
        try:
            sub = decode_subscription(base64.b64decode(m.metadata(protocol)))
        except Exception as exc:  # noqa: BLE001
            return None, UNSUPPORTED_ASSIGNOR, f"subscription of {m.member_id} cannot be decoded: {exc}"
        subscriptions.append((m, sub))
        for topic, count in m.topic_partitions:
            counts[topic] = max(counts.get(topic, 0), count)
    kind = subscription_type([sub.topics for _, sub in subscriptions])
    members = [
        MemberSubscription(
            m.member_id, tuple(t for t in sub.topics if t in counts), m.group_instance_id, sub.owned_partitions,
            sub.generation_id, sub.rack_id, sub.user_data,
        )
        for m, sub in subscriptions
    ]
    try:
        result = assignor.assign_group(Cluster(dict(sorted(counts.items()))), GroupSpec(members, kind))
    except PartitionAssignorError as exc:
        return None, UNKNOWN_SERVER_ERROR, (
            f"Failed to compute a new target assignment for epoch {group.generation + 1}: {exc}"
        )
    except Exception as exc:  # noqa: BLE001 - a failing assignor must not take the group down
        return None, UNSUPPORTED_ASSIGNOR, f"server assignor {name!r} failed: {exc}"
    return {
        member_id: base64.b64encode(encode_assignment(Assignment(
            tuple((topic, tuple(parts)) for topic, parts in partitions)
        ))).decode()
        for member_id, partitions in result.items()
    }, NONE, ""
