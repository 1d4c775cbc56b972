"""The directory sync: the record that keeps a group's directory entry (ListGroups, the metrics) in step with it.

Kafka writes a classic group's metadata record only where it persists the group; the directory (`state.views.
directory`) must follow every state change, so after each handler and each fired timer the runtime writes a group
metadata record when the state or protocol type changed since the last one (a consumer group: its group-epoch
record, with the state as our extension; a share group: its group-epoch record with its state and member count).
"""

from __future__ import annotations

from state.classic.group import ClassicGroup
from state.consumer.group import ConsumerGroup
from state.consumer.records import directory_record
from state.classic.records import directory_changed, group_record
from state.handling.step import NOTHING, CoordinatorResult
from state.share import records as share_records
from state.share.group import ShareGroup


def sync_directory(group: ClassicGroup | ConsumerGroup | ShareGroup | None) -> CoordinatorResult:
    """A group metadata record when the state or protocol type changed since the last one, so the directory
    (ListGroups) follows every state change, not only those Kafka persists (a consumer group: its group-epoch
    record, with the state as our extension)."""
    if isinstance(group, ClassicGroup):
        if directory_changed(group):
            return CoordinatorResult([group_record(group)])
    elif isinstance(group, ShareGroup):
        if share_records.directory_changed(group):
            return CoordinatorResult([share_records.directory_record(group)])
    elif group is not None:
        state = group.state.value
        if group.directory is None or group.directory[0] != state:
            return CoordinatorResult([directory_record(group)])
    return NOTHING
