"""The share groups' group-side APIs through a gateway in front of the real query and broker: a GROUP config set
before the group exists, ShareGroupHeartbeat joining and heartbeating (its steady heartbeat answered from the view),
ShareGroupDescribe, DescribeShareGroupOffsets, a classic JoinGroup refused on the share group's id, ListGroups of
type share, and `groupcoord-share-groups` against the same query."""

from __future__ import annotations

import io
import uuid

import pytest
from kafka.protocol.admin.configs import (DescribeConfigsRequest, DescribeConfigsResponse,
                                          IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse)
from kafka.protocol.admin.groups import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse

from admin.share_groups import main as share_groups
from gateway.upstream.control import from_json
from gateway.upstream.kafka_apis import (DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
                                         ShareGroupDescribeRequest, ShareGroupDescribeResponse,
                                         ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse)
from tests.gateway.conftest import wait_for
from tests.gateway.raw import Connection

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def heartbeat(connection: Connection, group: str, member: str, epoch: int, topics: list[str] | None = None):
    return connection.call(from_json(ShareGroupHeartbeatRequest, 1, {
        "group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
        "subscribed_topic_names": topics}), 1, ShareGroupHeartbeatResponse)


def test_share_group_side_apis_through_the_gateway(gateway_env):
    env = gateway_env
    topic = env.topic(partitions=2)
    group = f"share-{uuid.uuid4().hex[:8]}"
    c = Connection(env.bootstrap)
    try:
        def alter():  # a fresh query's first batch may outlast the gateway's request timeout (15: retry)
            altered = c.call(from_json(IncrementalAlterConfigsRequest, 1, {"resources": [{
                "resource_type": 32, "resource_name": group,
                "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
                "validate_only": False}), 1, IncrementalAlterConfigsResponse)
            codes = [r.error_code for r in altered.responses]
            return codes if codes != [15] else None
        assert wait_for(alter, 180, "the GROUP config set") == [0]
        described = c.call(from_json(DescribeConfigsRequest, 4, {"resources": [{
            "resource_type": 32, "resource_name": group, "configuration_keys": ["share.auto.offset.reset"]}],
            "include_synonyms": False, "include_documentation": False}), 4, DescribeConfigsResponse)
        assert [(x.name, x.value) for x in described.results[0].configs] == [("share.auto.offset.reset", "earliest")]

        joined = heartbeat(c, group, "m1", 0, [topic])
        assert joined.error_code == 0 and joined.member_epoch == 1
        # the topic is seconds old: until the query's next metadata refresh sees it, the member holds nothing and a
        # later heartbeat brings the assignment at a new epoch, as Kafka's coordinator does on a metadata change
        latest = {"answer": joined}

        def assigned():
            answer = latest["answer"]
            if answer.assignment is not None and answer.assignment.topic_partitions:
                return answer
            latest["answer"] = heartbeat(c, group, "m1", answer.member_epoch)
            assert latest["answer"].error_code == 0
            return None
        given = wait_for(assigned, 60, "the share member's assignment")
        assert [sorted(t.partitions) for t in given.assignment.topic_partitions] == [[0, 1]]
        epoch = given.member_epoch

        def steady():
            answer = heartbeat(c, group, "m1", epoch)
            return answer if answer.error_code == 0 and answer.assignment is None else None
        wait_for(steady, 60, "a steady share heartbeat")

        describe = c.call(from_json(ShareGroupDescribeRequest, 1, {"group_ids": [group],
                                                                   "include_authorized_operations": False}),
                          1, ShareGroupDescribeResponse)
        (g,) = describe.groups
        assert (g.error_code, g.group_state, g.assignor_name, [m.member_id for m in g.members]) == (
            0, "Stable", "simple", ["m1"])
        offsets = c.call(from_json(DescribeShareGroupOffsetsRequest, 1, {"groups": [{"group_id": group,
                                                                                      "topics": None}]}),
                         1, DescribeShareGroupOffsetsResponse)
        assert [(t.topic_name, sorted(p.partition_index for p in t.partitions)) for t in offsets.groups[0].topics] \
            == [(topic, [0, 1])]

        def join(member_id: str):
            return c.call(JoinGroupRequest[5](group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                              member_id=member_id, group_instance_id=None, protocol_type="consumer",
                                              protocols=[]), 5, JoinGroupResponse)
        # the member-id round is the gateway's (docs/gateway.md): the refusal comes with the JoinGroup after it
        first = join("")
        assert first.error_code == 79  # MEMBER_ID_REQUIRED
        assert join(first.member_id).error_code == 23  # INCONSISTENT_GROUP_PROTOCOL
        listed = c.call(ListGroupsRequest[5](states_filter=[], types_filter=["share"]), 5, ListGroupsResponse)
        assert (group, "share") in [(x.group_id, x.group_type) for x in listed.groups]

        out, err = io.StringIO(), io.StringIO()
        assert share_groups(["--bootstrap-server", env.broker, "--describe", "--group", group, "--members",
                             "--requests-topic", env.topics["topic.requests"],
                             "--responses-topic", env.topics["topic.responses"]], out=out, err=err) == 0, err
        assert "m1" in out.getvalue()
        assert heartbeat(c, group, "m1", -1).member_epoch == -1
    finally:
        c.close()
