"""Authorization of the requests the gateway forwards: Kafka's checks per API (KafkaApis), before the upstream sees
them, so the cluster only ever gets what the client's own principal may do.

Each API's rule gives a `Plan`: forward the frame unchanged (None: the common case, and for Produce and Fetch
decided from `gateway.upstream.peek` alone), answer here (everything refused), or forward a request without its refused
topics and add their errors to the upstream's answer, as Kafka answers a request it partly refuses:
- Produce: WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53, everywhere), WRITE on
  each topic (TOPIC_AUTHORIZATION_FAILED, 29, per partition; with acks=0 a refusal closes the connection, as Kafka
  closes it);
- Fetch: READ on each topic (29 per partition); a follower's fetch needs CLUSTER_ACTION;
- ListOffsets, OffsetForLeaderEpoch: DESCRIBE (the latter also passes with CLUSTER_ACTION); DeleteRecords: DELETE;
  DescribeProducers: READ; CreateTopics: CREATE on the cluster or on each topic; CreatePartitions: ALTER;
  DeleteTopics: DELETE; all per topic, 29;
- Metadata: topics the principal may not DESCRIBE are left out of an all-topics answer and answered 29 when named;
  auto-creation needs CREATE (cluster or topic); authorized operations come from the ACLs;
- InitProducerId: WRITE on the transactional id (53), or for an idempotent producer IDEMPOTENT_WRITE on the cluster
  or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED, 31); AddPartitionsToTxn, AddOffsetsToTxn (also READ on the
  group, 30), EndTxn: WRITE on the transactional id; FindCoordinator for a transaction: DESCRIBE on it;
- DescribeConfigs, AlterConfigs, IncrementalAlterConfigs: DESCRIBE_CONFIGS / ALTER_CONFIGS on the topic (29), the
  group (30) or the cluster for broker resources (31);
- ListPartitionReassignments: DESCRIBE on the cluster (31); DescribeCluster: authorized operations from the ACLs.
APIs without a rule here are not advertised while authorization is on (`POLICED`), so nothing passes unchecked.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.admin.configs import (AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest,
                                          DescribeConfigsResponse, IncrementalAlterConfigsRequest,
                                          IncrementalAlterConfigsResponse)
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                                         CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
                                         DeleteTopicsRequest, DeleteTopicsResponse,
                                         ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse)
from kafka.protocol.admin.transactions import DescribeProducersRequest, DescribeProducersResponse
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import (ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
                                             OffsetForLeaderEpochResponse)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse,
                                                 AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
                                                 EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
                                                 InitProducerIdResponse)

from gateway.upstream import peek
from gateway.security.acl import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from gateway.upstream.control import Json, from_json, to_json
from gateway.security.group_authz import GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, Session

Op, Res = AclOperation, ResourceType
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
OPERATION_NOT_ATTEMPTED = 55
UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100
INT32_MIN = -(1 << 31)
ZERO_UUID = str(uuid.UUID(int=0))


@dataclass(frozen=True)
class Plan:
    """What to do with a forwarded request that is not passed on unchanged."""

    frame: bytes | None = None
    """The request to forward instead (refused parts removed); None: nothing is forwarded."""
    answer: bytes | None = None
    """The whole answer, given here."""
    finish: Callable[[bytes], bytes] | None = None
    """Turns the upstream's answer (payload) into the client's (refused parts added)."""
    close: str | None = None
    """Close the connection, for this reason (acks=0 Produce with a refused topic)."""


class Context:
    """What a rule needs: the ACL snapshot, who asks, and the topic ids the gateway knows."""

    def __init__(self, authorizer: Authorizer, session: Session,
                 topic_names: Callable[[list[bytes]], Awaitable[dict[bytes, str]]]) -> None:
        self.authorizer, self.session = authorizer, session
        self._topic_names = topic_names

    def allowed(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(self.session.principal, self.session.host, op, rtype, name)

    def cluster(self, op: AclOperation) -> bool:
        return self.allowed(op, Res.CLUSTER, CLUSTER_NAME)

    def operations(self, rtype: ResourceType, name: str) -> int:
        return self.authorizer.authorized_operations(self.session.principal, self.session.host, rtype, name)

    async def names(self, ids: list[bytes]) -> dict[bytes, str]:
        return await self._topic_names(ids) if ids else {}


def _encode_response(cls: Any, version: int, doc: Json, correlation: int) -> bytes:
    message = from_json(cls, version, doc)
    message.with_header(correlation_id=correlation)
    return bytes(message.encode(header=True))


def _encode_request(cls: Any, version: int, doc: Json, header: Any) -> bytes:
    message = from_json(cls, version, doc)
    message.with_header(correlation_id=header.correlation_id, client_id=header.client_id)
    return bytes(message.encode(header=True))


# -- APIs keyed by topic ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicShape:
    """Where an API's request and response name topics and partitions (kafka-python's field names)."""

    request: Any
    response: Any
    topics: str
    """The request's topic array."""
    partitions: str | None
    """Each request topic's partitions: an array of structs (`partition`) or of ints (`partition` None)."""
    partition: str | None
    response_topics: str
    response_partitions: str | None
    response_partition: str | None
    refused_partition: Json
    """Fields of a refused partition besides its index and error (Kafka's "invalid" values)."""
    names: tuple[str, ...] = ("name",)
    """The topic's name field, then its id field where the API has one (the version decides which is there)."""


SHAPES: dict[int, TopicShape] = {
    ApiKey.Produce: TopicShape(ProduceRequest, ProduceResponse, "topic_data", "partition_data", "index",
                               "responses", "partition_responses", "index",
                               {"base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1},
                               ("name", "topic_id")),
    ApiKey.Fetch: TopicShape(FetchRequest, FetchResponse, "topics", "partitions", "partition", "responses",
                             "partitions", "partition_index",
                             {"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                              "preferred_read_replica": -1}, ("topic", "topic_id")),
    ApiKey.ListOffsets: TopicShape(ListOffsetsRequest, ListOffsetsResponse, "topics", "partitions", "partition_index",
                                   "topics", "partitions", "partition_index",
                                   {"timestamp": -1, "offset": -1, "leader_epoch": -1}),
    ApiKey.OffsetForLeaderEpoch: TopicShape(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, "topics",
                                            "partitions", "partition", "topics", "partitions", "partition",
                                            {"leader_epoch": -1, "end_offset": -1}, ("topic",)),
    ApiKey.DeleteRecords: TopicShape(DeleteRecordsRequest, DeleteRecordsResponse, "topics", "partitions",
                                     "partition_index", "topics", "partitions", "partition_index",
                                     {"low_watermark": -1}),
    ApiKey.DescribeProducers: TopicShape(DescribeProducersRequest, DescribeProducersResponse, "topics",
                                         "partition_indexes", None, "topics", "partitions", "partition_index", {}),
    ApiKey.CreateTopics: TopicShape(CreateTopicsRequest, CreateTopicsResponse, "topics", None, None, "topics", None,
                                    None, {"num_partitions": -1, "replication_factor": -1}),
    ApiKey.CreatePartitions: TopicShape(CreatePartitionsRequest, CreatePartitionsResponse, "topics", None, None,
                                        "results", None, None, {}),
}


def _topic_key(shape: TopicShape, topic: Json) -> tuple[str, Any]:
    for name in shape.names:
        if name in topic:
            return name, topic[name]
    raise ValueError("a topic without a name")


async def _topic_plan(ctx: Context, shape: TopicShape, frame: bytes, version: int, correlation: int,
                      decide: Callable[[str], int | None], whole: int | None = None) -> Plan | None:
    """Decode the request; topics `decide` refuses (an error code) are answered here, the rest forwarded.
    `whole`: one error for every topic (a refused transactional id, a follower without CLUSTER_ACTION)."""
    request = shape.request.decode(frame, version=version, header=True)
    doc = to_json(request, version)
    ids = [uuid.UUID(t["topic_id"]).bytes for t in doc[shape.topics] if "topic_id" in t]
    names = await ctx.names(ids)
    kept, refused = [], []
    for topic in doc[shape.topics]:
        field, key = _topic_key(shape, topic)
        if whole is not None:
            code = whole
        elif field == "topic_id":
            name = names.get(uuid.UUID(key).bytes)
            code = UNKNOWN_TOPIC_ID if name is None else decide(name)
        else:
            code = decide(key)
        if code:
            refused.append(_refused_topic(shape, topic, field, key, code))
        else:
            kept.append(topic)
    if not refused:
        return None
    if not kept:
        return Plan(answer=_encode_response(shape.response, version, {shape.response_topics: refused}, correlation))

    def finish(payload: bytes) -> bytes:
        answer = to_json(shape.response.decode(payload, version=version, header=True), version)
        answer[shape.response_topics] = [*answer.get(shape.response_topics, []), *refused]
        return _encode_response(shape.response, version, answer, correlation)

    return Plan(frame=_encode_request(shape.request, version, {**doc, shape.topics: kept}, request.header),
                finish=finish)


def _refused_topic(shape: TopicShape, topic: Json, field: str, key: Any, code: int) -> Json:
    entry: Json = {field: key, "error_code": code}
    if shape.partitions is not None:
        partitions = topic.get(shape.partitions) or []
        indexes = partitions if shape.partition is None else [p[shape.partition] for p in partitions]
        entry = {field: key, shape.response_partitions: [
            {**shape.refused_partition, shape.response_partition: p, "error_code": code} for p in indexes]}
    else:
        entry.update(shape.refused_partition)
    return entry


def _per_topic(ctx: Context, op: AclOperation) -> Callable[[str], int | None]:
    return lambda name: None if ctx.allowed(op, Res.TOPIC, name) else TOPIC_AUTHORIZATION_FAILED


async def _produce(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    summary = peek.produce(frame, version)
    whole = None
    if summary.transactional_id is not None and not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID,
                                                                summary.transactional_id):
        whole = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif await _all_topics_allowed(ctx, summary.topics, Op.WRITE):
        return None
    if summary.acks == 0:
        return Plan(close="an acks=0 Produce to a topic or transaction it may not write")
    return await _topic_plan(ctx, SHAPES[ApiKey.Produce], frame, version, correlation, _per_topic(ctx, Op.WRITE),
                             whole)


async def _fetch(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    summary = peek.fetch(frame, version)
    whole = None
    if summary.replica_id >= 0 and not ctx.cluster(Op.CLUSTER_ACTION):
        whole = TOPIC_AUTHORIZATION_FAILED
    elif await _all_topics_allowed(ctx, summary.topics, Op.READ):
        return None
    return await _topic_plan(ctx, SHAPES[ApiKey.Fetch], frame, version, correlation, _per_topic(ctx, Op.READ),
                             whole)


async def _all_topics_allowed(ctx: Context, topics: list[str | bytes], op: AclOperation) -> bool:
    ids = [t for t in topics if isinstance(t, bytes)]
    names = await ctx.names(ids) if ids else {}
    for topic in topics:
        name = names.get(topic) if isinstance(topic, bytes) else topic
        if name is None or not ctx.allowed(op, Res.TOPIC, name):
            return False
    return True


def _shaped(op: AclOperation, cluster_op: AclOperation | None = None) -> Callable:
    async def rule(ctx: Context, api_key: int, frame: bytes, version: int, correlation: int) -> Plan | None:
        if cluster_op is not None and ctx.cluster(cluster_op):
            return None
        return await _topic_plan(ctx, SHAPES[api_key], frame, version, correlation, _per_topic(ctx, op))
    return rule


# -- Metadata, DescribeCluster ---------------------------------------------------------------------------------------


async def _metadata(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan:
    request = MetadataRequest.decode(frame, version=version, header=True)
    doc = to_json(request, version)
    named = doc.get("topics")
    refused: list[str] = []
    asked: set[str] | None = None
    """Names forwarded when topics were named: some brokers (tansu) answer an empty list with every topic."""
    no_create: set[str] = set()
    changed = False
    if named:
        ids = [uuid.UUID(t["topic_id"]).bytes for t in named if not t.get("name") and t.get("topic_id")]
        names = await ctx.names(ids)
        kept = []
        for topic in named:
            name = topic.get("name") or names.get(uuid.UUID(topic["topic_id"]).bytes if topic.get("topic_id")
                                                   else b"")
            if name is not None and ctx.allowed(Op.DESCRIBE, Res.TOPIC, name):
                kept.append(topic)
            else:
                refused.append(name or "")
        if doc.get("allow_auto_topic_creation") and not ctx.cluster(Op.CREATE):
            no_create = {t["name"] for t in kept if t.get("name") and not ctx.allowed(Op.CREATE, Res.TOPIC,
                                                                                         t["name"])}
            if no_create:
                doc["allow_auto_topic_creation"] = False
                changed = True
        if refused:
            doc["topics"] = kept
            changed = True
        asked = {t.get("name") for t in kept} | {names.get(uuid.UUID(t["topic_id"]).bytes) for t in kept
                                                  if not t.get("name") and t.get("topic_id")}
    elif named is not None:
        asked = set()  # no topics asked for

    def finish(payload: bytes) -> bytes:
        answer = to_json(MetadataResponse.decode(payload, version=version, header=True), version)
        topics = []
        for topic in answer.get("topics", []):
            name = topic.get("name")
            if asked is not None and name not in asked:
                continue
            if named is None and not ctx.allowed(Op.DESCRIBE, Res.TOPIC, name or ""):
                continue  # an all-topics answer lists only what the principal may describe
            if name in no_create and topic["error_code"] == UNKNOWN_TOPIC_OR_PARTITION:
                topic = {**topic, "error_code": TOPIC_AUTHORIZATION_FAILED}
            if doc.get("include_topic_authorized_operations") and not topic["error_code"]:
                topic = {**topic, "authorized_operations": ctx.operations(Res.TOPIC, name)}
            topics.append(topic)
        topics += [{"error_code": TOPIC_AUTHORIZATION_FAILED, "name": name, "topic_id": ZERO_UUID,
                    "is_internal": False, "partitions": [], "authorized_operations": INT32_MIN} for name in refused]
        answer["topics"] = topics
        if doc.get("include_cluster_authorized_operations"):
            answer["authorized_operations"] = (ctx.operations(Res.CLUSTER, CLUSTER_NAME)
                                               if ctx.cluster(Op.DESCRIBE) else INT32_MIN)
        return _encode_response(MetadataResponse, version, answer, correlation)

    return Plan(frame=_encode_request(MetadataRequest, version, doc, request.header) if changed else frame,
                finish=finish)


async def _describe_cluster(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    request = DescribeClusterRequest.decode(frame, version=version, header=True)
    if not request.include_cluster_authorized_operations:
        return None

    def finish(payload: bytes) -> bytes:
        answer = to_json(DescribeClusterResponse.decode(payload, version=version, header=True), version)
        answer["cluster_authorized_operations"] = (ctx.operations(Res.CLUSTER, CLUSTER_NAME)
                                                   if ctx.cluster(Op.DESCRIBE) else INT32_MIN)
        return _encode_response(DescribeClusterResponse, version, answer, correlation)

    return Plan(frame=frame, finish=finish)


# -- whole requests: transactions, cluster operations ----------------------------------------------------------------


def _refuse_whole(response: Any, version: int, correlation: int, code: int, extra: Json | None = None) -> Plan:
    return Plan(answer=_encode_response(response, version, {"error_code": code, **(extra or {})}, correlation))


async def _init_producer_id(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    request = InitProducerIdRequest.decode(frame, version=version, header=True)
    no_id = {"producer_id": -1, "producer_epoch": -1}
    if request.transactional_id is not None:
        if ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactional_id):
            return None
        return _refuse_whole(InitProducerIdResponse, version, correlation, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                             no_id)
    if ctx.cluster(Op.IDEMPOTENT_WRITE) or ctx.authorizer.authorize_any(ctx.session.principal, ctx.session.host,
                                                                        Op.WRITE, Res.TOPIC):
        return None
    return _refuse_whole(InitProducerIdResponse, version, correlation, CLUSTER_AUTHORIZATION_FAILED, no_id)


async def _end_txn(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    request = EndTxnRequest.decode(frame, version=version, header=True)
    if ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactional_id):
        return None
    return _refuse_whole(EndTxnResponse, version, correlation, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


async def _add_offsets_to_txn(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    request = AddOffsetsToTxnRequest.decode(frame, version=version, header=True)
    if not ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactional_id):
        return _refuse_whole(AddOffsetsToTxnResponse, version, correlation, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.allowed(Op.READ, Res.GROUP, request.group_id):
        return _refuse_whole(AddOffsetsToTxnResponse, version, correlation, GROUP_AUTHORIZATION_FAILED)
    return None


async def _add_partitions_to_txn(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    if version >= 4:  # batched, from brokers
        return None if ctx.cluster(Op.CLUSTER_ACTION) else _refuse_whole(
            AddPartitionsToTxnResponse, version, correlation, CLUSTER_AUTHORIZATION_FAILED)
    doc = to_json(AddPartitionsToTxnRequest.decode(frame, version=version, header=True), version)
    topics = doc["v3_and_below_topics"]
    if ctx.allowed(Op.WRITE, Res.TRANSACTIONAL_ID, doc["v3_and_below_transactional_id"]):
        refused = {t["name"] for t in topics if not ctx.allowed(Op.WRITE, Res.TOPIC, t["name"])}
        if not refused:
            return None
        code_of = lambda name: TOPIC_AUTHORIZATION_FAILED if name in refused else OPERATION_NOT_ATTEMPTED  # noqa
    else:
        code_of = lambda name: TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # noqa: E731
    # As Kafka: nothing is added when any part is refused; the rest is OPERATION_NOT_ATTEMPTED.
    results = [{"name": t["name"], "results_by_partition": [
        {"partition_index": p, "partition_error_code": code_of(t["name"])} for p in t["partitions"]]}
        for t in topics]
    return Plan(answer=_encode_response(AddPartitionsToTxnResponse, version,
                                        {"results_by_topic_v3_and_below": results}, correlation))


async def _find_coordinator(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    """Transaction coordinators (groups are answered by the gateway itself, after `group_coordinator_allowed`)."""
    request = FindCoordinatorRequest.decode(frame, version=version, header=True)
    keys = request.coordinator_keys if version >= 4 else [request.key]
    refused = [k for k in keys if not ctx.allowed(Op.DESCRIBE, Res.TRANSACTIONAL_ID, k)]
    if not refused:
        return None
    entries = [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "error_message": "Transactional Id authorization failed."} for k in refused]
    if version < 4:
        return Plan(answer=_encode_response(FindCoordinatorResponse, version, entries[0], correlation))
    kept = [k for k in keys if k not in refused]
    if not kept:
        return Plan(answer=_encode_response(FindCoordinatorResponse, version, {"coordinators": entries},
                                            correlation))
    doc = to_json(request, version)

    def finish(payload: bytes) -> bytes:
        answer = to_json(FindCoordinatorResponse.decode(payload, version=version, header=True), version)
        answer["coordinators"] = [*answer.get("coordinators", []), *entries]
        return _encode_response(FindCoordinatorResponse, version, answer, correlation)

    return Plan(frame=_encode_request(FindCoordinatorRequest, version, {**doc, "coordinator_keys": kept},
                                      request.header), finish=finish)


def group_coordinator_allowed(authorizer: Authorizer, session: Session, group_id: str) -> bool:
    """FindCoordinator for a group: DESCRIBE on it (else GROUP_AUTHORIZATION_FAILED)."""
    return authorizer.authorize(session.principal, session.host, Op.DESCRIBE, Res.GROUP, group_id)


async def _delete_topics(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    request = DeleteTopicsRequest.decode(frame, version=version, header=True)
    doc = to_json(request, version)
    if version < 6:
        entries = [{"name": n} for n in doc["topic_names"]]
    else:
        entries = doc["topics"]
    ids = [uuid.UUID(t["topic_id"]).bytes for t in entries if not t.get("name") and t.get("topic_id")]
    names = await ctx.names(ids)
    kept, refused = [], []
    for t in entries:
        name = t.get("name") or names.get(uuid.UUID(t["topic_id"]).bytes)
        if name is not None and ctx.allowed(Op.DELETE, Res.TOPIC, name):
            kept.append(t)
        else:
            refused.append({**t, "error_code": TOPIC_AUTHORIZATION_FAILED if name else UNKNOWN_TOPIC_ID,
                            "error_message": None})
    if not refused:
        return None
    if not kept:
        return Plan(answer=_encode_response(DeleteTopicsResponse, version, {"responses": refused}, correlation))
    if version < 6:
        doc["topic_names"] = [t["name"] for t in kept]
    else:
        doc["topics"] = kept

    def finish(payload: bytes) -> bytes:
        answer = to_json(DeleteTopicsResponse.decode(payload, version=version, header=True), version)
        answer["responses"] = [*answer.get("responses", []), *refused]
        return _encode_response(DeleteTopicsResponse, version, answer, correlation)

    return Plan(frame=_encode_request(DeleteTopicsRequest, version, doc, request.header), finish=finish)


_CONFIG_TOPIC, _CONFIG_GROUP = 2, 32
"""Kafka's ConfigResource types that name a topic or a group; the others (brokers, loggers, client metrics) are
the cluster's."""


def _configs(request_cls: Any, response_cls: Any, results: str, op: AclOperation) -> Callable:
    async def rule(ctx: Context, api_key: int, frame: bytes, version: int, correlation: int) -> Plan | None:
        request = request_cls.decode(frame, version=version, header=True)
        doc = to_json(request, version)
        kept, refused = [], []
        for resource in doc["resources"]:
            rtype, name = resource["resource_type"], resource["resource_name"]
            if rtype == _CONFIG_TOPIC:
                code = None if ctx.allowed(op, Res.TOPIC, name) else TOPIC_AUTHORIZATION_FAILED
            elif rtype == _CONFIG_GROUP:
                code = None if ctx.allowed(op, Res.GROUP, name) else GROUP_AUTHORIZATION_FAILED
            else:
                code = None if ctx.cluster(op) else CLUSTER_AUTHORIZATION_FAILED
            if code:
                refused.append({"error_code": code, "error_message": None, "resource_type": rtype,
                                "resource_name": name, "configs": []})
            else:
                kept.append(resource)
        if not refused:
            return None
        if not kept:
            return Plan(answer=_encode_response(response_cls, version, {results: refused}, correlation))

        def finish(payload: bytes) -> bytes:
            answer = to_json(response_cls.decode(payload, version=version, header=True), version)
            answer[results] = [*answer.get(results, []), *refused]
            return _encode_response(response_cls, version, answer, correlation)

        return Plan(frame=_encode_request(request_cls, version, {**doc, "resources": kept}, request.header),
                    finish=finish)
    return rule


async def _list_reassignments(ctx: Context, frame: bytes, version: int, correlation: int) -> Plan | None:
    ListPartitionReassignmentsRequest.decode(frame, version=version, header=True)
    if ctx.cluster(Op.DESCRIBE):
        return None
    return _refuse_whole(ListPartitionReassignmentsResponse, version, correlation, CLUSTER_AUTHORIZATION_FAILED)


def _keyless(rule: Callable) -> Callable:
    async def keyed(ctx: Context, api_key: int, frame: bytes, version: int, correlation: int) -> Plan | None:
        return await rule(ctx, frame, version, correlation)
    return keyed


RULES: dict[int, Callable[[Context, int, bytes, int, int], Awaitable[Plan | None]]] = {
    ApiKey.Produce: _keyless(_produce),
    ApiKey.Fetch: _keyless(_fetch),
    ApiKey.ListOffsets: _shaped(Op.DESCRIBE),
    ApiKey.OffsetForLeaderEpoch: _shaped(Op.DESCRIBE, cluster_op=Op.CLUSTER_ACTION),
    ApiKey.DeleteRecords: _shaped(Op.DELETE),
    ApiKey.DescribeProducers: _shaped(Op.READ),
    ApiKey.CreateTopics: _shaped(Op.CREATE, cluster_op=Op.CREATE),
    ApiKey.CreatePartitions: _shaped(Op.ALTER),
    ApiKey.DeleteTopics: _keyless(_delete_topics),
    ApiKey.Metadata: _keyless(_metadata),
    ApiKey.DescribeCluster: _keyless(_describe_cluster),
    ApiKey.InitProducerId: _keyless(_init_producer_id),
    ApiKey.EndTxn: _keyless(_end_txn),
    ApiKey.AddOffsetsToTxn: _keyless(_add_offsets_to_txn),
    ApiKey.AddPartitionsToTxn: _keyless(_add_partitions_to_txn),
    ApiKey.FindCoordinator: _keyless(_find_coordinator),
    ApiKey.DescribeConfigs: _configs(DescribeConfigsRequest, DescribeConfigsResponse, "results",
                                     Op.DESCRIBE_CONFIGS),
    ApiKey.AlterConfigs: _configs(AlterConfigsRequest, AlterConfigsResponse, "responses", Op.ALTER_CONFIGS),
    ApiKey.IncrementalAlterConfigs: _configs(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
                                             "responses", Op.ALTER_CONFIGS),
    ApiKey.ListPartitionReassignments: _keyless(_list_reassignments),
}
"""Forwarded API key -> its rule."""

UNCHECKED = frozenset({71, 72})
"""GetTelemetrySubscriptions, PushTelemetry: Kafka authorizes neither (a client's own metrics)."""
POLICED = frozenset(RULES) | UNCHECKED
"""The upstream APIs advertised while authorization is on."""


async def plan(ctx: Context, api_key: int, frame: bytes, version: int, correlation: int) -> Plan | None:
    """How to forward this request (None: unchanged)."""
    rule = RULES.get(api_key)
    if rule is None:
        return None
    return await rule(ctx, api_key, frame, version, correlation)
