"""Authorization of the group APIs on their control JSON, without a network: what reaches the coordinator, what is
answered at once, and how the refused parts join the coordinator's answer (Kafka's KafkaApis checks)."""

from __future__ import annotations

from gateway.security.acl import AclBinding, AclOperation, AclPermissionType, Authorizer, PatternType, ResourceType
from gateway.security.group_authz import Session, group_access

ALICE = Session("User:alice", "10.0.0.1")
AUTHORIZER = Authorizer([
    AclBinding(ResourceType.GROUP, "app-", PatternType.PREFIXED, "User:alice", "*", AclOperation.READ,
               AclPermissionType.ALLOW),
    AclBinding(ResourceType.TOPIC, "a", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
               AclPermissionType.ALLOW)])


def test_member_apis_need_read_on_the_group():
    allowed = group_access(AUTHORIZER, ALICE, "Heartbeat", 4, {"group_id": "app-1", "member_id": "m"})
    assert allowed.request == {"group_id": "app-1", "member_id": "m"} and allowed.answer is None
    refused = group_access(AUTHORIZER, ALICE, "JoinGroup", 9, {"group_id": "other"})
    assert refused.request is None and refused.answer["error_code"] == 30 and refused.answer["generation_id"] == -1


def test_offset_commit_refuses_topics_per_partition_and_commits_the_rest():
    doc = {"group_id": "app-1", "topics": [
        {"name": "a", "partitions": [{"partition_index": 0, "committed_offset": 5}]},
        {"name": "b", "partitions": [{"partition_index": 0, "committed_offset": 5},
                                     {"partition_index": 1, "committed_offset": 5}]}]}
    access = group_access(AUTHORIZER, ALICE, "OffsetCommit", 8, doc)
    assert [t["name"] for t in access.request["topics"]] == ["a"]
    merged = access.complete({"topics": [{"name": "a", "partitions": [{"partition_index": 0, "error_code": 0}]}]})
    assert [(t["name"], [(p["partition_index"], p["error_code"]) for p in t["partitions"]]) for t in merged["topics"]] \
        == [("a", [(0, 0)]), ("b", [(0, 29), (1, 29)])]
    only_b = group_access(AUTHORIZER, ALICE, "OffsetCommit", 8, {**doc, "topics": doc["topics"][1:]})
    assert only_b.request is None and [p["error_code"] for p in only_b.answer["topics"][0]["partitions"]] == [29, 29]
    other_group = group_access(AUTHORIZER, ALICE, "OffsetCommit", 8, {**doc, "group_id": "other"})
    assert other_group.request is None
    assert {p["error_code"] for t in other_group.answer["topics"] for p in t["partitions"]} == {30}


def test_offset_fetch_v8_per_group_and_topic():
    doc = {"require_stable": False, "groups": [
        {"group_id": "other", "topics": None},
        {"group_id": "app-1", "topics": [{"name": "a", "partition_indexes": [0]},
                                         {"name": "b", "partition_indexes": [0]}]},
        {"group_id": "app-2", "topics": None}]}
    access = group_access(AUTHORIZER, ALICE, "OffsetFetch", 8, doc)
    assert [g["group_id"] for g in access.request["groups"]] == ["app-1", "app-2"]
    assert access.request["groups"][0]["topics"] == [{"name": "a", "partition_indexes": [0]}]
    merged = access.complete({"groups": [
        {"group_id": "app-1", "error_code": 0, "topics": [{"name": "a", "partitions": [{"partition_index": 0}]}]},
        {"group_id": "app-2", "error_code": 0, "topics": [{"name": "a", "partitions": []},
                                                          {"name": "secret", "partitions": []}]}]})
    assert [(g["group_id"], g["error_code"], [t["name"] for t in g["topics"]]) for g in merged["groups"]] == [
        ("other", 30, []), ("app-1", 0, ["a", "b"]), ("app-2", 0, ["a"])]
    assert merged["groups"][1]["topics"][1]["partitions"][0]["error_code"] == 29


def test_describe_and_delete_groups_keep_request_order():
    access = group_access(AUTHORIZER, ALICE, "DescribeGroups", 5,
                          {"groups": ["other", "app-1"], "include_authorized_operations": True})
    assert access.request["groups"] == ["app-1"]
    merged = access.complete({"groups": [{"group_id": "app-1", "error_code": 0, "authorized_operations": 0}]})
    assert [(g["group_id"], g["error_code"]) for g in merged["groups"]] == [("other", 30), ("app-1", 0)]
    assert merged["groups"][1]["authorized_operations"] == (1 << 3) | (1 << 8)
    deleted = group_access(AUTHORIZER, ALICE, "DeleteGroups", 2, {"groups_names": ["app-1"]})
    assert deleted.request is None and deleted.answer["results"] == [{"group_id": "app-1", "error_code": 30}]


def test_list_groups_shows_only_describable_groups_without_cluster_describe():
    access = group_access(AUTHORIZER, ALICE, "ListGroups", 4, {"states_filter": []})
    merged = access.complete({"error_code": 0, "groups": [{"group_id": "app-1"}, {"group_id": "other"}]})
    assert merged["groups"] == [{"group_id": "app-1"}]
    admin = Authorizer(super_users={"User:admin"})
    everything = group_access(admin, Session("User:admin", "h"), "ListGroups", 4, {"states_filter": []})
    assert everything.complete({"groups": [{"group_id": "other"}]})["groups"] == [{"group_id": "other"}]


def test_a_consumer_group_heartbeat_needs_read_on_the_group_and_describe_on_its_topics():
    """KafkaApis.handleConsumerGroupHeartbeat: READ on the group (30), then DESCRIBE on every subscribed topic named
    (29 for the whole request); a heartbeat naming no topics (a regular one) needs the group only. READ on topic
    `a` implies DESCRIBE."""
    reader = AUTHORIZER
    join = {"group_id": "app-1", "member_id": "m", "member_epoch": 0, "subscribed_topic_names": ["a"]}
    assert group_access(reader, ALICE, "ConsumerGroupHeartbeat", 1, join).request == join
    regular = {**join, "member_epoch": 3, "subscribed_topic_names": None}
    assert group_access(reader, ALICE, "ConsumerGroupHeartbeat", 1, regular).request == regular
    secret = group_access(reader, ALICE, "ConsumerGroupHeartbeat", 1, {**join, "subscribed_topic_names": ["a", "b"]})
    assert secret.request is None and secret.answer["error_code"] == 29 and secret.answer["member_epoch"] == 0
    other = group_access(reader, ALICE, "ConsumerGroupHeartbeat", 1, {**join, "group_id": "other"})
    assert other.request is None and other.answer["error_code"] == 30


def test_a_consumer_group_describe_refuses_groups_and_groups_holding_hidden_topics():
    """KafkaApis.handleConsumerGroupDescribe: DESCRIBE on each group (30 for that group); a described group whose
    members hold or are to hold a topic the principal may not DESCRIBE answers 29; operations when asked for."""
    access = group_access(AUTHORIZER, ALICE, "ConsumerGroupDescribe", 1,
                          {"group_ids": ["other", "app-1", "app-2"], "include_authorized_operations": True})
    assert access.request["group_ids"] == ["app-1", "app-2"]

    def described(group_id: str, topic: str) -> dict:
        held = {"topic_partitions": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "topic_name": topic, "partitions": [0]}]}
        return {"group_id": group_id, "error_code": 0, "group_state": "Stable", "members": [
            {"member_id": "m", "assignment": held, "target_assignment": {"topic_partitions": []}}]}

    merged = access.complete({"groups": [described("app-1", "a"), described("app-2", "b")]})
    assert [(g["group_id"], g["error_code"]) for g in merged["groups"]] == [("other", 30), ("app-1", 0), ("app-2", 29)]
    assert merged["groups"][1]["authorized_operations"] == (1 << 3) | (1 << 8)
    assert merged["groups"][2]["members"] == []


# -- share groups (KIP-932): KafkaApis' checks of the five group-side APIs ---------------------------------------


def test_a_share_group_heartbeat_needs_read_on_the_group_and_describe_on_its_topics():
    """KafkaApis.handleShareGroupHeartbeat: as the consumer group's (30 for the group, 29 for a subscribed topic the
    principal may not DESCRIBE, for the whole request)."""
    join = {"group_id": "app-1", "member_id": "m", "member_epoch": 0, "rack_id": None,
            "subscribed_topic_names": ["a"]}
    assert group_access(AUTHORIZER, ALICE, "ShareGroupHeartbeat", 1, join).request == join
    regular = {**join, "member_epoch": 2, "subscribed_topic_names": None}
    assert group_access(AUTHORIZER, ALICE, "ShareGroupHeartbeat", 1, regular).request == regular
    secret = group_access(AUTHORIZER, ALICE, "ShareGroupHeartbeat", 1, {**join, "subscribed_topic_names": ["a", "b"]})
    assert secret.request is None and secret.answer["error_code"] == 29
    other = group_access(AUTHORIZER, ALICE, "ShareGroupHeartbeat", 1, {**join, "group_id": "other"})
    assert other.request is None and other.answer["error_code"] == 30


def test_a_share_group_describe_refuses_groups_and_groups_holding_hidden_topics():
    access = group_access(AUTHORIZER, ALICE, "ShareGroupDescribe", 1,
                          {"group_ids": ["app-1", "other", "app-2"], "include_authorized_operations": False})
    assert access.request["group_ids"] == ["app-1", "app-2"]

    def described(group_id: str, topic: str) -> dict:  # a share member has an assignment and no target
        held = {"topic_partitions": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "topic_name": topic, "partitions": [0]}]}
        return {"group_id": group_id, "error_code": 0, "group_state": "Stable",
                "members": [{"member_id": "m", "assignment": held}]}

    merged = access.complete({"groups": [described("app-1", "a"), described("app-2", "b")]})
    assert [(g["group_id"], g["error_code"]) for g in merged["groups"]] == [("app-1", 0), ("other", 30), ("app-2", 29)]


def test_describe_share_group_offsets_per_group_and_topic():
    """DESCRIBE on each group (30 for it); a named topic the principal may not DESCRIBE gets 29 on its partitions;
    an all-topics request lists only the topics it may describe."""
    doc = {"groups": [{"group_id": "other", "topics": None},
                      {"group_id": "app-1", "topics": [{"topic_name": "a", "partitions": [0]},
                                                       {"topic_name": "b", "partitions": [0, 1]}]},
                      {"group_id": "app-2", "topics": None}]}
    access = group_access(AUTHORIZER, ALICE, "DescribeShareGroupOffsets", 1, doc)
    assert [(g["group_id"], g["topics"]) for g in access.request["groups"]] == [
        ("app-1", [{"topic_name": "a", "partitions": [0]}]), ("app-2", None)]

    def topic(name: str) -> dict:
        return {"topic_name": name, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
                "partitions": [{"partition_index": 0, "start_offset": 4, "error_code": 0}]}

    merged = access.complete({"groups": [{"group_id": "app-1", "error_code": 0, "topics": [topic("a")]},
                                         {"group_id": "app-2", "error_code": 0, "topics": [topic("a"), topic("b")]}]})
    assert [(g["group_id"], g["error_code"], [t["topic_name"] for t in g["topics"]]) for g in merged["groups"]] == [
        ("other", 30, []), ("app-1", 0, ["a", "b"]), ("app-2", 0, ["a"])]
    assert [p["error_code"] for p in merged["groups"][1]["topics"][1]["partitions"]] == [29, 29]
    nothing = group_access(AUTHORIZER, ALICE, "DescribeShareGroupOffsets", 1, {"groups": doc["groups"][:1]})
    assert nothing.request is None and nothing.answer["groups"][0]["error_code"] == 30


def test_alter_and_delete_share_group_offsets_need_read_or_delete_on_the_group_and_read_on_each_topic():
    alter = {"group_id": "app-1", "topics": [
        {"topic_name": "a", "partitions": [{"partition_index": 0, "start_offset": 0}]},
        {"topic_name": "b", "partitions": [{"partition_index": 0, "start_offset": 0}]}]}
    access = group_access(AUTHORIZER, ALICE, "AlterShareGroupOffsets", 0, alter)
    assert [t["topic_name"] for t in access.request["topics"]] == ["a"]
    merged = access.complete({"error_code": 0, "responses": [{"topic_name": "a", "partitions": [
        {"partition_index": 0, "error_code": 0}]}]})
    assert [(t["topic_name"], [p["error_code"] for p in t["partitions"]]) for t in merged["responses"]] == [
        ("a", [0]), ("b", [29])]
    refused_group = group_access(AUTHORIZER, ALICE, "AlterShareGroupOffsets", 0, {**alter, "group_id": "other"})
    assert refused_group.request is None and refused_group.answer["error_code"] == 30
    # alice may READ app-* but not DELETE: DeleteShareGroupOffsets needs DELETE on the group
    delete = {"group_id": "app-1", "topics": [{"topic_name": "a"}]}
    refused = group_access(AUTHORIZER, ALICE, "DeleteShareGroupOffsets", 0, delete)
    assert refused.request is None and refused.answer["error_code"] == 30
    deleter = Authorizer([
        AclBinding(ResourceType.GROUP, "app-", PatternType.PREFIXED, "User:alice", "*", AclOperation.DELETE,
                   AclPermissionType.ALLOW),
        AclBinding(ResourceType.TOPIC, "a", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                   AclPermissionType.ALLOW)])
    assert group_access(deleter, ALICE, "DeleteShareGroupOffsets", 0, delete).request == delete
    only_b = group_access(deleter, ALICE, "DeleteShareGroupOffsets", 0, {**delete, "topics": [{"topic_name": "b"}]})
    assert only_b.request is None and [(t["topic_name"], t["error_code"]) for t in only_b.answer["responses"]] == [
        ("b", 29)]
