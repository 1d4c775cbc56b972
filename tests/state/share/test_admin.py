"""A share group's admin APIs and configs, as Kafka answers them: ShareGroupDescribe, the share-group offsets APIs
(describe with the start offset and what the lag needs, alter and delete on an empty group whose share-partitions
no gateway holds), DeleteGroups' tombstones, and the GROUP configs."""

from __future__ import annotations

import pytest

from schemas.share_group import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestTopic,
    ShareGroupDescribeRequest,
)
from state.config import CoordinatorConfig
from state.errors import CoordinatorError, Errors
from state.share import admin, configs
from state.share.describe import share_group_describe
from state.share.partitions.partition import PersistedState
from state.share.replay import replay
from tests.state.share.support import FOO, Share
from tests.state.share.test_holding import grant, update

CONFIG = CoordinatorConfig()


def describe_offsets(s: Share, topics=None):
    request = DescribeShareGroupOffsetsRequest(request_id="d", group_id="g", topics=topics)
    return admin.describe_share_group_offsets(s.group, request, s.image)


def alter(s: Share, offset: int, topic: str = "foo"):
    request = AlterShareGroupOffsetsRequest(request_id="a", group_id="g", topics=(AlterShareGroupOffsetsRequestTopic(
        topic, (AlterShareGroupOffsetsRequestPartition(0, offset), AlterShareGroupOffsetsRequestPartition(9, 1))),))
    return s.apply(admin.alter_share_group_offsets(s.group, request, s.image, s.now)).response


def test_describe_lists_members_and_assignments():
    s = Share()
    s.heartbeat("m1", 0, ("foo",), rack="r1")
    r = share_group_describe(s.group, ShareGroupDescribeRequest(request_id="x", group_id="g"), s.image)
    assert (r.group_state, r.group_epoch, r.assignment_epoch, r.assignor_name) == ("Stable", 1, 1, "simple")
    (m,) = r.members
    assert (m.member_id, m.rack_id, m.member_epoch, m.subscribed_topic_names) == ("m1", "r1", 1, ("foo",))
    assert [(tp.topic_id, tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == [
        (FOO, "foo", (0,))]


def test_describe_offsets_start_offset_and_delivery_complete_count():
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    (topic,) = describe_offsets(s).topics
    assert (topic.topic_name, topic.topic_id, topic.partitions[0].start_offset) == ("foo", FOO, -1)
    answer = grant(s, "gw", "take", -1)
    update(s, "gw", answer.epoch, 10, ())
    (topic,) = describe_offsets(s, (DescribeShareGroupOffsetsRequestTopic("foo", (0,)),
                                    DescribeShareGroupOffsetsRequestTopic("nope", (0,)))).topics[:1]
    assert (topic.partitions[0].start_offset, topic.partitions[0].delivery_complete_count) == (10, 0)
    nope = describe_offsets(s, (DescribeShareGroupOffsetsRequestTopic("nope", (3,)),)).topics[0]
    assert (nope.topic_id, nope.partitions[0].start_offset, nope.partitions[0].error_code) == (
        "AAAAAAAAAAAAAAAAAAAAAA", -1, 0)


def test_alter_needs_an_empty_group_and_free_share_partitions():
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    assert alter(s, 5).error_code == Errors.NON_EMPTY_GROUP
    answer = grant(s, "gw", "take", -1)
    s.heartbeat("m1", -1)
    refused = alter(s, 5)
    assert refused.error_code == Errors.NON_EMPTY_GROUP and "still holds" in refused.error_message
    grant(s, "gw", "release", answer.epoch)
    done = alter(s, 5)
    assert done.error_code == 0
    assert [(p.partition_index, p.error_code) for p in done.responses[0].partitions] == [
        (0, 0), (9, Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    snapshot = s.group.partitions[(FOO, 0)]
    assert snapshot.persisted == PersistedState(5, 2) and snapshot.grant.epoch == answer.epoch + 1


def test_alter_creates_a_missing_group_and_initialises_its_partitions():
    """KAFKA-19662: reset offsets of a group that does not exist yet."""
    s = Share()
    assert alter(s, 7).error_code == 0
    assert s.group.state.value == "Empty" and s.group.initialized[FOO].partitions == frozenset({0})
    assert describe_offsets(s).topics[0].partitions[0].start_offset == 7


def test_delete_offsets_and_delete_group():
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    grant(s, "gw", "take", -1)
    s.heartbeat("m1", -1)
    with pytest.raises(CoordinatorError) as held:
        admin.validate_delete(s.group)
    assert held.value.code == Errors.NON_EMPTY_GROUP
    answer = s.group.partitions[(FOO, 0)].grant
    grant(s, "gw", "release", answer.epoch)
    request = DeleteShareGroupOffsetsRequest(request_id="x", group_id="g", topics=(
        DeleteShareGroupOffsetsRequestTopic("foo"), DeleteShareGroupOffsetsRequestTopic("nope")))
    r = s.apply(admin.delete_share_group_offsets(s.group, request, s.image, s.now)).response
    assert [(t.topic_name, t.error_code) for t in r.responses] == [
        ("foo", 0), ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert FOO not in s.group.initialized and s.group.partitions[(FOO, 0)].grant.epoch == answer.epoch + 1
    admin.validate_delete(s.group)
    group = s.group
    for record in admin.delete_records(group):
        group = replay(group, record)
    assert group is None


def test_group_configs_alter_validate_and_describe():
    values = configs.alter({}, [("share.auto.offset.reset", configs.SET, "earliest"),
                                ("share.record.lock.duration.ms", configs.SET, "15000")], CONFIG)
    assert values == {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"}
    settings = configs.ShareSettings.of(values, CONFIG)
    assert (settings.auto_offset_reset, settings.record_lock_duration_ms, settings.delivery_count_limit) == (
        "earliest", 15000, 5)
    assert configs.alter(values, [("share.auto.offset.reset", configs.DELETE, None)], CONFIG) == {
        "share.record.lock.duration.ms": "15000"}
    described = {d.name: (value, set_) for d, value, set_ in configs.describe(values, None, CONFIG)}
    assert described["share.auto.offset.reset"] == ("earliest", True)
    assert described["share.delivery.count.limit"] == ("5", False)


@pytest.mark.parametrize("name, value, message", [
    ("share.record.lock.duration.ms", "1000",
     "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
    ("share.delivery.count.limit", "11",
     "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"),
    ("share.auto.offset.reset", "oldest", "Invalid value `oldest` for configuration share.auto.offset.reset"),
    ("share.isolation.level", "dirty", "String must be one of"),
    ("share.heartbeat.interval.ms", "x", "Not a number of type INT"),
    ("no.such.config", "1", "Unknown group config name: no.such.config"),
])
def test_invalid_group_configs(name, value, message):
    with pytest.raises(CoordinatorError) as refused:
        configs.alter({}, [(name, configs.SET, value)], CONFIG)
    assert refused.value.code == Errors.INVALID_CONFIG and message in refused.value.message


def test_auto_offset_reset_by_duration():
    assert configs.alter({}, [("share.auto.offset.reset", configs.SET, "by_duration:PT1H30M")], CONFIG)
    with pytest.raises(CoordinatorError):
        configs.alter({}, [("share.auto.offset.reset", configs.SET, "by_duration:1H")], CONFIG)
