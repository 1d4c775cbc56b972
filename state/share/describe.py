"""ShareGroupDescribe: a share group as Kafka's `kafka-share-groups.sh --describe` and the admin client's
`describe_share_groups` show it (Kafka's GroupMetadataManager.shareGroupDescribe, ShareGroup.asDescribedGroup).

Topics are shown with their names from the metadata image; a topic the image no longer has is left out. Members
come in member id order. There are no ACLs, so authorized operations are never reported.
"""

from __future__ import annotations

from schemas.share_group import (
    SIMPLE_ASSIGNOR,
    ShareDescribedAssignment,
    ShareDescribedMember,
    ShareDescribedTopicPartitions,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from state.errors import Errors
from state.share.group import Partitions, ShareGroup
from state.topics.image import MetadataImage


def share_group_describe(group: object, request: ShareGroupDescribeRequest,
                         image: MetadataImage) -> ShareGroupDescribeResponse:
    """The group's state, epochs and members; GROUP_ID_NOT_FOUND for no group, or a group of another kind."""
    if not isinstance(group, ShareGroup):
        message = (f"Group {request.group_id} not found." if group is None
                   else f"Group {request.group_id} is not a share group.")
        return ShareGroupDescribeResponse(request_id=request.request_id, group_id=request.group_id,
                                          error_code=Errors.GROUP_ID_NOT_FOUND, error_message=message)
    return ShareGroupDescribeResponse(
        request_id=request.request_id, group_id=group.group_id, error_code=Errors.NONE,
        group_state=group.state.value, group_epoch=group.group_epoch,
        assignment_epoch=max(group.assignment_epoch, 0), assignor_name=SIMPLE_ASSIGNOR,
        members=tuple(ShareDescribedMember(
            member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
            assignment=_described(m.assigned_partitions, image)) for _, m in sorted(group.members.items())))


def _described(partitions: Partitions, image: MetadataImage) -> ShareDescribedAssignment:
    return ShareDescribedAssignment(tuple(
        ShareDescribedTopicPartitions(t, image.name_of(t) or "", tuple(sorted(p)))
        for t, p in sorted(partitions.items()) if p and image.name_of(t) is not None))
