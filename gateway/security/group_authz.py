"""Authorization of the group APIs, before anything reaches the control topic (or the fast path).

Kafka's checks (KafkaApis), on the decoded request as control JSON:
- JoinGroup, SyncGroup, Heartbeat, LeaveGroup: READ on the group, else GROUP_AUTHORIZATION_FAILED (30) in the
  API's error shape;
- OffsetCommit: READ on the group (30 on every partition), then READ on each topic: a refused topic's partitions
  get TOPIC_AUTHORIZATION_FAILED (29) and the others are committed;
- OffsetFetch: DESCRIBE on each group (30 for that group); named topics the principal may not DESCRIBE get 29 per
  partition, and an all-topics fetch lists only the topics it may describe;
- OffsetDelete: DELETE on the group, READ on each topic (29 per partition);
- DescribeGroups: DESCRIBE on each group, and `authorized_operations` from the ACLs when asked for;
- DeleteGroups: DELETE on each group;
- ListGroups: every group with DESCRIBE on the cluster, else only the groups the principal may DESCRIBE;
- ConsumerGroupHeartbeat (KIP-848): READ on the group (30), then DESCRIBE on every topic it subscribes to by name
  (TOPIC_AUTHORIZATION_FAILED, 29, for the whole request);
- ConsumerGroupDescribe: DESCRIBE on each group (30 for that group), `authorized_operations` when asked for, and a
  described group whose members hold or are to hold a topic the principal may not DESCRIBE answers 29.
- ShareGroupHeartbeat, ShareGroupDescribe (KIP-932): as the consumer group's two;
- DescribeShareGroupOffsets: DESCRIBE on each group (30), DESCRIBE on each topic (29 on its partitions);
- AlterShareGroupOffsets / DeleteShareGroupOffsets: READ / DELETE on the group (30), READ on each topic (29).
Refused parts never reach the coordinator; the answers for the rest are merged with them, in request order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from gateway.security.acl import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from gateway.upstream.control import Json, unanswered

GROUP_AUTHORIZATION_FAILED = 30
TOPIC_AUTHORIZATION_FAILED = 29
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
GROUP_MESSAGE = "Group authorization failed."
_MEMBER_APIS = frozenset({"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"})
Op, Res = AclOperation, ResourceType


@dataclass(frozen=True)
class Session:
    """Who is asking: the authenticated principal and the client's IP address."""

    principal: str
    host: str


@dataclass
class GroupAccess:
    request: Json | None
    """The request with its refused parts removed (None: nothing is left to send)."""
    answer: Json | None = None
    """The whole answer, when nothing is left to send."""
    complete: Callable[[Json], Json] = field(default=lambda merged: merged)
    """Adds the refused parts to the coordinator's merged answer."""


def group_access(authorizer: Authorizer, session: Session, api: str, version: int, doc: Json) -> GroupAccess:
    def allowed(op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return authorizer.authorize(session.principal, session.host, op, rtype, name)

    if api in _MEMBER_APIS:
        if allowed(Op.READ, Res.GROUP, doc["group_id"]):
            return GroupAccess(doc)
        return GroupAccess(None, _refused(api, doc))
    if api == "TxnOffsetCommit" and not allowed(Op.WRITE, Res.TRANSACTIONAL_ID, doc["transactional_id"]):
        return GroupAccess(None, unanswered({"api": api, **doc}, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                            "Transactional id authorization failed."))
    if api in ("OffsetCommit", "OffsetDelete", "TxnOffsetCommit"):
        operation = Op.DELETE if api == "OffsetDelete" else Op.READ
        if not allowed(operation, Res.GROUP, doc["group_id"]):
            return GroupAccess(None, _refused(api, doc))
        kept, refused = _split_topics(doc["topics"], lambda name: allowed(Op.READ, Res.TOPIC, name))
        return _with_refused_topics({**doc, "topics": kept}, refused, lambda t: {"partition_index": t})
    if api == "OffsetFetch":
        return _offset_fetch(allowed, version, doc)
    if api == "DescribeGroups":
        return _describe_groups(authorizer, session, allowed, doc)
    if api == "DeleteGroups":
        return _per_group(doc, "groups_names", "results", lambda g: allowed(Op.DELETE, Res.GROUP, g),
                          lambda g: {"group_id": g, "error_code": GROUP_AUTHORIZATION_FAILED})
    if api in ("ConsumerGroupHeartbeat", "ShareGroupHeartbeat"):
        if not allowed(Op.READ, Res.GROUP, doc["group_id"]):
            return GroupAccess(None, _refused(api, doc))
        refused = [t for t in doc.get("subscribed_topic_names") or () if not allowed(Op.DESCRIBE, Res.TOPIC, t)]
        if refused:
            return GroupAccess(None, unanswered({"api": api, **doc}, TOPIC_AUTHORIZATION_FAILED,
                                                f"Topic authorization failed for {', '.join(sorted(refused))}."))
        return GroupAccess(doc)
    if api == "ConsumerGroupDescribe":
        return _consumer_group_describe(authorizer, session, allowed, doc)
    if api == "ShareGroupDescribe":
        return _consumer_group_describe(authorizer, session, allowed, doc, parts=("assignment",))
    if api == "DescribeShareGroupOffsets":
        return _describe_share_group_offsets(allowed, doc)
    if api in ("AlterShareGroupOffsets", "DeleteShareGroupOffsets"):
        operation = Op.READ if api == "AlterShareGroupOffsets" else Op.DELETE
        if not allowed(operation, Res.GROUP, doc["group_id"]):
            return GroupAccess(None, _refused(api, doc))
        return _share_topics(api, doc, lambda name: allowed(Op.READ, Res.TOPIC, name))
    if api == "ListGroups":
        if allowed(Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
            return GroupAccess(doc)
        return GroupAccess(doc, complete=lambda merged: {**merged, "groups": [
            g for g in merged.get("groups", []) if allowed(Op.DESCRIBE, Res.GROUP, g["group_id"])]})
    raise ValueError(f"not a group API: {api}")


def _refused(api: str, doc: Json) -> Json:
    return unanswered({"api": api, **doc}, GROUP_AUTHORIZATION_FAILED, GROUP_MESSAGE)


def _split_topics(topics: list[Json] | None, allowed: Callable[[str], bool]) -> tuple[list[Json] | None, list[Json]]:
    if topics is None:
        return None, []
    kept, refused = [], []
    for topic in topics:
        (kept if allowed(topic["name"]) else refused).append(topic)
    return kept, refused


def _partitions(topic: Json) -> list[int]:
    if "partition_indexes" in topic:
        return list(topic["partition_indexes"])
    return [p["partition_index"] for p in topic.get("partitions", [])]


def _refused_topics(refused: list[Json], partition: Callable[[int], Json]) -> list[Json]:
    return [{"name": t["name"], "partitions": [{**partition(p), "error_code": TOPIC_AUTHORIZATION_FAILED}
                                               for p in _partitions(t)]} for t in refused]


def _with_refused_topics(doc: Json, refused: list[Json], partition: Callable[[int], Json]) -> GroupAccess:
    """The request without the refused topics; their partitions answered 29 after the coordinator's answer. When
    every named topic is refused, nothing goes to the coordinator (as Kafka, which then answers alone)."""
    if not refused:
        return GroupAccess(doc)
    entries = _refused_topics(refused, partition)
    if not doc["topics"]:
        return GroupAccess(None, {"throttle_time_ms": 0, "error_code": 0, "topics": entries})
    return GroupAccess(doc, complete=lambda merged: {**merged, "topics": [*merged.get("topics", []), *entries]})


def _unauthorized_offset(p: int) -> Json:
    return {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": ""}


def _offset_fetch(allowed: Callable, version: int, doc: Json) -> GroupAccess:
    describe_topic = lambda name: allowed(Op.DESCRIBE, Res.TOPIC, name)  # noqa: E731

    def visible(answer: Json) -> Json:
        """An all-topics fetch lists only topics the principal may describe."""
        return {**answer, "topics": [t for t in answer.get("topics") or [] if describe_topic(t["name"])]}

    if version < 8:
        if not allowed(Op.DESCRIBE, Res.GROUP, doc["group_id"]):
            return GroupAccess(None, _refused("OffsetFetch", doc))
        if doc.get("topics") is None:
            return GroupAccess(doc, complete=visible)
        kept, refused = _split_topics(doc["topics"], describe_topic)
        return _with_refused_topics({**doc, "topics": kept}, refused, _unauthorized_offset)
    # v8+: several groups, each with its own topics (or all of them).
    plans: list[tuple[Json, list[Json] | None]] = []  # (group as sent or refused entry, refused topic entries)
    sent: list[Json] = []
    for group in doc["groups"]:
        if not allowed(Op.DESCRIBE, Res.GROUP, group["group_id"]):
            plans.append(({"group_id": group["group_id"], "error_code": GROUP_AUTHORIZATION_FAILED, "topics": []},
                          None))
            continue
        kept, refused = _split_topics(group.get("topics"), describe_topic)
        sent.append({**group, "topics": kept})
        plans.append((sent[-1], _refused_topics(refused, _unauthorized_offset)))
    if len(sent) == len(doc["groups"]) and not any(entries for _, entries in plans):
        return GroupAccess(doc, complete=lambda merged: {**merged, "groups": [
            visible(g) if q.get("topics") is None else g for g, q in zip(merged["groups"], doc["groups"])]})

    def complete(merged: Json) -> Json:
        answers = iter(merged.get("groups", []))
        groups = []
        for group, refused_topics in plans:
            if refused_topics is None:
                groups.append(group)
                continue
            answer = next(answers)
            if group.get("topics") is None:
                answer = visible(answer)
            groups.append({**answer, "topics": [*(answer.get("topics") or []), *refused_topics]})
        return {**merged, "groups": groups}

    if not sent:
        return GroupAccess(None, complete({"throttle_time_ms": 0, "groups": []}))
    return GroupAccess({**doc, "groups": sent}, complete=complete)


def _per_group(doc: Json, request_key: str, response_key: str, allowed: Callable[[str], bool],
               refused_entry: Callable[[str], Json]) -> GroupAccess:
    """APIs that name several groups: refused groups get their entry here, in the request's order."""
    names = doc[request_key]
    kept = [g for g in names if allowed(g)]
    if len(kept) == len(names):
        return GroupAccess(doc)

    def complete(merged: Json) -> Json:
        answers = iter(merged.get(response_key, []))
        return {**merged, response_key: [next(answers) if allowed(g) else refused_entry(g) for g in names]}

    if not kept:
        return GroupAccess(None, complete({"throttle_time_ms": 0, response_key: []}))
    return GroupAccess({**doc, request_key: kept}, complete=complete)


def _describe_groups(authorizer: Authorizer, session: Session, allowed: Callable, doc: Json) -> GroupAccess:
    def refused_entry(group_id: str) -> Json:
        return {"error_code": GROUP_AUTHORIZATION_FAILED, "group_id": group_id, "group_state": "",
                "protocol_type": "", "protocol_data": "", "members": [], "authorized_operations": -(1 << 31)}

    access = _per_group(doc, "groups", "groups", lambda g: allowed(Op.DESCRIBE, Res.GROUP, g), refused_entry)
    if not doc.get("include_authorized_operations"):
        return access
    inner = access.complete

    def with_operations(merged: Json) -> Json:
        merged = inner(merged)
        return {**merged, "groups": [
            g if g.get("error_code") else {**g, "authorized_operations": authorizer.authorized_operations(
                session.principal, session.host, Res.GROUP, g["group_id"])} for g in merged["groups"]]}

    if access.answer is not None:
        return GroupAccess(None, access.answer)
    return GroupAccess(access.request, complete=with_operations)


def _consumer_group_describe(authorizer: Authorizer, session: Session, allowed: Callable, doc: Json,
                             parts: tuple[str, ...] = ("assignment", "target_assignment")) -> GroupAccess:
    """KafkaApis.handleConsumerGroupDescribe (and handleShareGroupDescribe, whose members have no target):
    DESCRIBE on each group, then on every topic a described member holds or is to hold; operations from the ACLs
    when asked for."""
    def refused_entry(group_id: str, code: int = GROUP_AUTHORIZATION_FAILED) -> Json:
        message = GROUP_MESSAGE if code == GROUP_AUTHORIZATION_FAILED else "Topic authorization failed."
        return {"error_code": code, "error_message": message, "group_id": group_id, "group_state": "",
                "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                "authorized_operations": -(1 << 31)}

    def topics_allowed(group: Json) -> bool:
        return all(allowed(Op.DESCRIBE, Res.TOPIC, t["topic_name"]) for m in group.get("members") or []
                   for part in parts for t in m[part]["topic_partitions"])

    access = _per_group(doc, "group_ids", "groups", lambda g: allowed(Op.DESCRIBE, Res.GROUP, g), refused_entry)
    if access.answer is not None:
        return access
    inner = access.complete
    with_operations = bool(doc.get("include_authorized_operations"))

    def complete(merged: Json) -> Json:
        groups = []
        for g in inner(merged)["groups"]:
            if not g.get("error_code") and not topics_allowed(g):
                g = refused_entry(g["group_id"], TOPIC_AUTHORIZATION_FAILED)
            elif not g.get("error_code") and with_operations:
                g = {**g, "authorized_operations": authorizer.authorized_operations(
                    session.principal, session.host, Res.GROUP, g["group_id"])}
            groups.append(g)
        return {**merged, "groups": groups}

    return GroupAccess(access.request, complete=complete)


def _describe_share_group_offsets(allowed: Callable, doc: Json) -> GroupAccess:
    """KafkaApis.handleDescribeShareGroupOffsetsRequest: DESCRIBE on each group (30 for that group), DESCRIBE on each
    named topic (29 on its partitions; an all-topics request lists only the topics the principal may describe)."""
    def refused_entry(group: Json) -> Json:
        return {"group_id": group["group_id"], "topics": [], "error_code": GROUP_AUTHORIZATION_FAILED,
                "error_message": GROUP_MESSAGE}

    groups = doc["groups"]
    kept = [g for g in groups if allowed(Op.DESCRIBE, Res.GROUP, g["group_id"])]
    refused_topics: dict[str, list[Json]] = {}
    request_groups = []
    for g in kept:
        topics = g.get("topics")
        if topics is not None:
            refused_topics[g["group_id"]] = [
                {"topic_name": t["topic_name"], "topic_id": "00000000-0000-0000-0000-000000000000",
                 "partitions": [{"partition_index": p, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                                 "error_code": TOPIC_AUTHORIZATION_FAILED, "error_message": None}
                                for p in t["partitions"]]}
                for t in topics if not allowed(Op.DESCRIBE, Res.TOPIC, t["topic_name"])]
            topics = [t for t in topics if allowed(Op.DESCRIBE, Res.TOPIC, t["topic_name"])]
        request_groups.append({**g, "topics": topics})

    def complete(merged: Json) -> Json:
        answers = iter(merged.get("groups", []))
        out = []
        for g in groups:
            if g not in kept:
                out.append(refused_entry(g))
                continue
            answer = next(answers)
            topics = answer.get("topics") or []
            if g.get("topics") is None:
                topics = [t for t in topics if allowed(Op.DESCRIBE, Res.TOPIC, t["topic_name"])]
            out.append({**answer, "topics": [*topics, *refused_topics.get(g["group_id"], [])]})
        return {**merged, "groups": out}

    if not kept:
        return GroupAccess(None, complete({"throttle_time_ms": 0, "groups": []}))
    return GroupAccess({**doc, "groups": request_groups}, complete=complete)


def _share_topics(api: str, doc: Json, allowed: Callable[[str], bool]) -> GroupAccess:
    """Alter/DeleteShareGroupOffsets: READ on each topic; a refused topic is answered 29 (with its partitions for
    Alter), the rest goes on."""
    topics = doc["topics"]
    refused = [t for t in topics if not allowed(t["topic_name"])]
    if not refused:
        return GroupAccess(doc)
    zero = "00000000-0000-0000-0000-000000000000"
    if api == "AlterShareGroupOffsets":
        entries = [{"topic_name": t["topic_name"], "topic_id": zero, "partitions": [
            {"partition_index": p["partition_index"], "error_code": TOPIC_AUTHORIZATION_FAILED,
             "error_message": "Topic authorization failed."} for p in t["partitions"]]} for t in refused]
    else:
        entries = [{"topic_name": t["topic_name"], "topic_id": zero, "error_code": TOPIC_AUTHORIZATION_FAILED,
                    "error_message": "Topic authorization failed."} for t in refused]
    kept = [t for t in topics if allowed(t["topic_name"])]
    if not kept:
        return GroupAccess(None, {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": entries})
    return GroupAccess({**doc, "topics": kept},
                       complete=lambda merged: {**merged, "responses": [*merged.get("responses", []), *entries]})
