"""The group's target assignment from its server-side assignor: Kafka's TargetAssignmentBuilder.

The assignor sees every member with the topics it subscribes to (names and its resolved regular expression, only
those the metadata image has) and its current target, the group's subscription type, and each topic's partition
count. A static member that replaces another one (same instance id) starts from the replaced member's target.
The result is written as one target-assignment record per member whose target changed, then the assignment epoch
record; a member removed in the same change has its target tombstoned by its removal, not here.

Our assignors (`assignors/`) name topics; the protocol names them by id, so ids become names on the way in and
names become ids on the way out. Members are handed over in ascending member id order (Kafka visits its HashMap),
records are written in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from assignors.api import Cluster, GroupSpec, MemberSubscription, ServerAssignor, SubscriptionType
from state.consumer import records
from state.consumer.group import ConsumerGroupMember, Partitions
from state.topics.image import MetadataImage
from state.records import Record


@dataclass(frozen=True)
class TargetAssignment:
    records: tuple[Record, ...]
    members: Mapping[str, Partitions]
    """The new target of every member."""


def build_target_assignment(
    *,
    group_id: str,
    group_epoch: int,
    assignor: ServerAssignor,
    members: Mapping[str, ConsumerGroupMember],
    updated: Mapping[str, ConsumerGroupMember | None],
    static_members: Mapping[str, str],
    subscription_type: SubscriptionType,
    target: Mapping[str, Partitions],
    resolved_regexes: Mapping[str, frozenset[str]],
    image: MetadataImage,
    now_ms: int,
) -> TargetAssignment:
    """`members`: the group's members before the change; `updated`: members added or changed (None: removed).
    Raises the assignor's PartitionAssignorError when it cannot assign the group."""
    everyone = {**members}
    current = {member_id: target.get(member_id, {}) for member_id in members}
    for member_id, member in updated.items():
        if member is None:
            everyone.pop(member_id, None)
            current.pop(member_id, None)
            continue
        everyone[member_id] = member
        previous = static_members.get(member.instance_id) if member.instance_id is not None else None
        if previous is not None and previous != member_id:
            current[member_id] = target.get(previous, {})
        else:
            current[member_id] = target.get(member_id, {})

    names = {t.topic_id: t.name for t in image.by_id.values()}
    specs = []
    subscribed: set[str] = set()
    for member_id in sorted(everyone):
        member = everyone[member_id]
        topics = set(member.subscribed_topic_names)
        if member.regex is not None:
            topics |= resolved_regexes.get(member.regex, frozenset())
        topics = sorted(t for t in topics if t in image.by_name)
        subscribed.update(topics)
        owned = tuple(sorted((names[t], tuple(sorted(p))) for t, p in current[member_id].items() if t in names))
        specs.append(MemberSubscription(member_id, tuple(topics), member.instance_id, owned, rack_id=member.rack_id))
    cluster = Cluster({t: image.by_name[t].partitions for t in sorted(subscribed)},
                      topic_ids={t: image.by_name[t].topic_id for t in sorted(subscribed)})
    result = assignor.assign_group(cluster, GroupSpec(specs, subscription_type))

    new_target: dict[str, Partitions] = {}
    out: list[Record] = []
    for spec in specs:
        member_id = spec.member_id
        assigned = {image.by_name[t].topic_id: frozenset(parts)
                    for t, parts in result.get(member_id, ()) if parts}
        new_target[member_id] = assigned
        if member_id not in target or target[member_id] != assigned:
            out.append(records.target_assignment(group_id, member_id, assigned))
    out.append(records.target_assignment_epoch(group_id, group_epoch, now_ms))
    return TargetAssignment(tuple(out), new_target)

