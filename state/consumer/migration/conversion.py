"""Converting a group between the protocols while it has members (KIP-848's online migration): the records only.

Kafka's `ConsumerGroup.fromClassicGroup` + `createConsumerGroupRecords` (upgrade) and `ClassicGroup.fromConsumerGroup`
+ `createClassicGroupRecords` (downgrade), under `group.consumer.migration.policy`. Pure: (group, image, config) ->
records; `state.consumer.handlers` applies them (and does what Kafka's runtime does beside the records: parked
requests answered, timers moved, a rebalance prepared).

Partitions cross between the two by topic name (the classic protocol's) and topic id (the consumer protocol's)
through the cluster's metadata image. Kafka's image always holds every topic of the cluster, so its
`toTopicPartitionMap` can leave out a topic the image lacks: the topic is gone. Ours is the driver's last
`TopicMetadata` (`streaming.kafka_io.topic_watch`), absent just after a rebuild from the records topic and up to a
refresh interval behind the cluster, so an upgrade waits until the image names every topic the classic members
hold (`upgrade_records`).
"""

from __future__ import annotations

import base64
import struct

import msgspec

from assignors.consumer_protocol import (
    ASSIGNMENT_VERSION,
    Assignment,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from schemas.consumer_group import ClassicMemberMetadata, ClassicProtocol
from schemas.messages import GroupDirectoryEntry, GroupMetadataKey, GroupMetadataRecord, GroupMetadataValue, \
    MemberMetadata
from state.consumer import records
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup, ConsumerGroupMember, MemberState, Partitions
from state.topics.image import MetadataImage
from state.errors import CoordinatorError, Errors
from state.classic.group import ClassicGroup
from state.records import Record

CONSUMER_PROTOCOL_TYPE = "consumer"


# -- classic -> consumer -------------------------------------------------------------------------------------------

def validate_online_upgrade(group: ClassicGroup, config: CoordinatorConfig) -> bool:
    """Kafka's validateOnlineUpgrade: the policy allows it, the group's members speak the consumer protocol, and
    it fits in a consumer group."""
    return (config.migration_allows("upgrade") and group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and len(group.members) <= config.group_consumer_max_size)


def upgrade_records(group: ClassicGroup, image: MetadataImage) -> list[Record]:
    """The consumer group's records for a classic group with members (Kafka's fromClassicGroup and
    createConsumerGroupRecords): group epoch and assignment epoch = the generation; every member STABLE at the
    generation, its target and assigned partitions its last classic assignment, its classic metadata (session
    timeout, protocols) kept. In Kafka's order: subscriptions, group epoch, targets, assignment epoch, current
    assignments. A member whose embedded protocol cannot be decoded, or whose assignment carries user data (the
    reference's section 9), makes the upgrade impossible (GROUP_ID_NOT_FOUND). A member holding a topic the image
    does not name defers it (COORDINATOR_LOAD_IN_PROGRESS, which clients retry): converting then would take that
    topic's partitions from their owner, unrevoked, and give them to another member."""
    group_id = group.group_id
    generation = group.generation
    members: list[ConsumerGroupMember] = []
    try:
        for member_id in sorted(group.members):
            m = group.members[member_id]
            subscription = decode_subscription(base64.b64decode(m.metadata(group.protocol_name)))
            classic_assignment = decode_assignment(base64.b64decode(m.assignment))
            if classic_assignment.user_data:
                # a client-side assignor's state (the sticky assignors' generation): the server cannot carry it
                raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {group_id} "
                                       "to consumer group because an assignment carries user data.")
            _throw_if_topics_are_unknown(group_id, classic_assignment.assigned_partitions, image)
            assigned = _ids(classic_assignment.assigned_partitions, image)
            members.append(ConsumerGroupMember(
                member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id, member_epoch=generation,
                previous_member_epoch=generation, state=MemberState.STABLE, rebalance_timeout_ms=m.rebalance_timeout_ms,
                client_id=m.client_id, client_host=m.client_host, principal=m.principal,
                subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                assigned_partitions={t: dict.fromkeys(p, generation) for t, p in assigned.items()},
                classic_member_metadata=ClassicMemberMetadata(session_timeout_ms=m.session_timeout_ms, supported_protocols=tuple(
                    ClassicProtocol(name=name, metadata=metadata) for name, metadata in m.protocols))))
    except (ConsumerProtocolError, ValueError, struct.error):
        raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {group_id} to consumer "
                               "group because the embedded consumer protocol is malformed.") from None
    return [
        *(records.member_subscription(group_id, m) for m in members),
        records.group_epoch(group_id, generation, 0),
        *(records.target_assignment(group_id, m.member_id, m.assigned()) for m in members),
        records.target_assignment_epoch(group_id, generation, 0),
        *(records.current_assignment(group_id, m) for m in members),
    ]


def _throw_if_topics_are_unknown(group_id: str, partitions: tuple[tuple[str, tuple[int, ...]], ...],
                                 image: MetadataImage) -> None:
    unknown = sorted({name for name, parts in partitions if parts and name not in image.by_name})
    if unknown:
        raise CoordinatorError(Errors.COORDINATOR_LOAD_IN_PROGRESS, f"Cannot upgrade the classic group {group_id} "
                               f"to consumer group yet: the cluster's topics do not include {', '.join(unknown)}.")


def _ids(partitions: tuple[tuple[str, tuple[int, ...]], ...], image: MetadataImage) -> Partitions:
    out: dict[str, frozenset[int]] = {}
    for name, parts in partitions:
        topic = image.by_name.get(name)
        if topic is not None and parts:
            out[topic.topic_id] = out.get(topic.topic_id, frozenset()) | frozenset(parts)
    return out


# -- consumer -> classic -------------------------------------------------------------------------------------------

def validate_online_downgrade(group: ConsumerGroup, leaving: str, config: CoordinatorConfig) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMember: `leaving` is the group's last member of the consumer
    protocol, at least one member stays, the policy allows it, and what stays fits in a classic group."""
    member = group.members.get(leaving)
    if member is None or member.uses_classic_protocol:
        return False
    if any(not m.uses_classic_protocol for m_id, m in group.members.items() if m_id != leaving):
        return False
    return (len(group.members) > 1 and config.migration_allows("downgrade")
            and len(group.members) - 1 <= config.group_max_size)


def validate_online_downgrade_with_replaced_member(group: ConsumerGroup, replaced: str,
                                                   config: CoordinatorConfig) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMemberId: a static member of the classic protocol takes the place
    of `replaced`, and every other member uses the classic protocol too; the policy allows it, and the group (as
    many members as before) fits in a classic group."""
    return (all(m.uses_classic_protocol for m_id, m in group.members.items() if m_id != replaced)
            and config.migration_allows("downgrade") and len(group.members) <= config.group_max_size)


def downgrade_record(group: ConsumerGroup, leaving: str | None, image: MetadataImage, now_ms: int) -> Record:
    """The classic group's metadata record for what stays of the group once `leaving` is gone (None: every member
    stays, one of them having just replaced a static member) (Kafka's fromConsumerGroup): Stable at generation = the group epoch, protocol type `consumer`, the protocol the members
    vote for, each member's assignment its target serialized with the consumer protocol at the version its
    subscription was written with. Written after the consumer group's tombstones (`delete_records`)."""
    staying = [group.members[m] for m in sorted(group.members) if m != leaving]
    protocol = _select_protocol(staying)
    members = []
    for m in staying:
        metadata = _metadata(m, protocol)
        assignment = encode_assignment(Assignment(_names(group.target_assignment.get(m.member_id, {}), image)),
                                       min(_version(metadata), ASSIGNMENT_VERSION))
        members.append(MemberMetadata(
            member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.classic_member_metadata.session_timeout_ms,  # type: ignore[union-attr]
            subscription=metadata, assignment=base64.b64encode(assignment).decode(),
            principal=msgspec.UNSET if m.principal is None else m.principal))
    value = GroupMetadataValue(protocol_type=CONSUMER_PROTOCOL_TYPE, generation=group.group_epoch, protocol=protocol,
                               leader=staying[0].member_id, current_state_timestamp=now_ms, members=tuple(members))
    return Record(GroupMetadataKey(group.group_id), GroupMetadataRecord(
        *msgspec.structs.astuple(value),  # type: ignore[call-arg]
        directory=GroupDirectoryEntry("Stable", CONSUMER_PROTOCOL_TYPE, len(members))))


def _select_protocol(members: list[ConsumerGroupMember]) -> str:
    """Kafka's selectProtocol: every member votes for its most preferred protocol that all support; most votes
    wins (ties to the name that sorts first, as `ClassicGroup.select_protocol`)."""
    names = [[p.name for p in m.classic_member_metadata.supported_protocols]  # type: ignore[union-attr]
             for m in members]
    candidates = set(names[0]).intersection(*names[1:])
    votes: dict[str, int] = {}
    for preferred in names:
        choice = next(n for n in preferred if n in candidates)
        votes[choice] = votes.get(choice, 0) + 1
    return min(votes, key=lambda name: (-votes[name], name))


def _metadata(member: ConsumerGroupMember, protocol: str) -> str:
    return next(p.metadata for p in member.classic_member_metadata.supported_protocols  # type: ignore[union-attr]
                if p.name == protocol)


def _version(metadata: str) -> int:
    raw = base64.b64decode(metadata)
    return struct.unpack(">h", raw[:2])[0] if len(raw) >= 2 else 0


def _names(partitions: Partitions, image: MetadataImage) -> tuple[tuple[str, tuple[int, ...]], ...]:
    named = []
    for topic_id, parts in partitions.items():
        name = image.name_of(topic_id)
        if name is not None and parts:
            named.append((name, tuple(sorted(parts))))
    return tuple(sorted(named))


def assignment_bytes(member: ConsumerGroupMember, image: MetadataImage) -> str:
    """A classic member's assigned partitions as its SyncGroup answer carries them (Kafka's prepareAssignment),
    at the version of its first protocol's subscription."""
    first = member.classic_member_metadata.supported_protocols[0].metadata  # type: ignore[union-attr]
    return base64.b64encode(encode_assignment(Assignment(_names(member.assigned(), image)),
                                              min(_version(first), ASSIGNMENT_VERSION))).decode()
