"""ConsumerGroupDescribe: a consumer group as Kafka's `kafka-consumer-groups.sh --describe` and the admin client's
`describe_consumer_groups` show it (Kafka's GroupMetadataManager.consumerGroupDescribe, ConsumerGroup
.asDescribedGroup, ConsumerGroupMember.asConsumerGroupDescribeMember).

Topics are shown with their names from the metadata image; a topic the image no longer has is left out. Members
come in member id order. There are no ACLs, so authorized operations are never reported.
"""

from __future__ import annotations

from schemas.consumer_group import (
    Assignment,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    Member,
    TopicPartitions,
)
from state.consumer.group import ConsumerGroup, ConsumerGroupMember, Partitions
from state.topics.image import MetadataImage
from state.errors import Errors

CLASSIC_MEMBER_TYPE = 0
CONSUMER_MEMBER_TYPE = 1
"""ConsumerGroupDescribe v1's MemberType: 1 for a member of the consumer protocol (0 classic, -1 unknown)."""


def consumer_group_describe(group: ConsumerGroup | None, request: ConsumerGroupDescribeRequest,
                            default_assignor: str, image: MetadataImage) -> ConsumerGroupDescribeResponse:
    def error(code: Errors, message: str) -> ConsumerGroupDescribeResponse:
        return ConsumerGroupDescribeResponse(request_id=request.request_id, group_id=request.group_id,
                                             error_code=code, error_message=message)

    if not request.group_id:
        return error(Errors.INVALID_GROUP_ID, "The group id must not be empty.")
    if group is None:
        return error(Errors.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
    return ConsumerGroupDescribeResponse(
        request_id=request.request_id,
        group_id=group.group_id,
        error_code=Errors.NONE,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.preferred_server_assignor() or default_assignor,
        members=tuple(_member(group.members[m], group.target_assignment.get(m, {}), image)
                      for m in sorted(group.members)),
    )


def _member(member: ConsumerGroupMember, target: Partitions, image: MetadataImage) -> Member:
    return Member(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=member.subscribed_topic_names,
        subscribed_topic_regex=member.subscribed_topic_regex,
        assignment=_assignment(member.assigned(), image),
        target_assignment=_assignment(target, image),
        member_type=CLASSIC_MEMBER_TYPE if member.uses_classic_protocol else CONSUMER_MEMBER_TYPE,
    )


def _assignment(partitions: Partitions, image: MetadataImage) -> Assignment:
    listed = []
    for topic_id, parts in sorted(partitions.items()):
        name = image.name_of(topic_id)
        if name is not None and parts:
            listed.append(TopicPartitions(topic_id, name, tuple(sorted(parts))))
    return Assignment(tuple(listed))
