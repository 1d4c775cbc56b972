"""ShareFetch (78) and ShareAcknowledge (79), answered by the gateway (docs/share-groups.md; the reference's §2).

In Kafka's order (KafkaApis `handleShareFetchRequest`): the member id (1-36 characters, else INVALID_REQUEST), with
v2's IsRenewAck the limits all 0, READ on the group, the share session (its errors are the request's), READ on each
topic, the acknowledgements (validated per partition, applied by the holder, durable before the answer), then the
fetch from every partition of the session, and the merge: every acknowledged partition is answered, with its
AcknowledgeErrorCode.

- Topic ids named twice (in Topics, or in Topics and ForgottenTopicsData, as librdkafka may) are merged; an id the
  cluster does not know is UNKNOWN_TOPIC_ID on its partitions.
- MaxRecords is one budget over the session's partitions, taken in turn from a first partition that rotates with
  the epoch; MaxBytes is split evenly between them (at least one batch each).
- A long poll as Kafka's DelayedShareFetch: the fetch acquires once MinBytes are there to acquire, the bytes of
  the logs from each share-partition's next fetch offset on (each at most its share of MaxBytes;
  `Holder.fetchable_bytes`), or a log read failed; else it waits, up to MaxWaitMs, for any of its share-partitions
  to change or its log to grow (`Holder.waiter`), and at MaxWaitMs acquires what there is. With MinBytes 1, the
  clients' default, any record acquired is enough, so the fetch acquires at once rather than count first (one read
  of each log, not two). MinBytes 0 is met at once by any share-partition this process serves that is not at its
  cap. Records are acquired when the answer is made, so their locks count from then. With no partition, MaxRecords
  0 or MaxBytes 0 it answers at once. A share-partition this process does not hold yet is taken on the way (a
  micro-batch): the wait covers it.
- Records are never null: a partition with none answers empty bytes. The records are the log batches holding the
  acquired ranges, as they are in the log.
- A new session's answer names every partition; later answers those with records, errors or acknowledgements.
- Epoch -1 acknowledges, fetches nothing, closes the session and releases the member's records; so does the close
  of the connection that opened the session.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any, Hashable, Protocol

from gateway.protocol import strict
from gateway.fast.fast_path import FastPath
from gateway.security.acl import AclOperation, Authorizer, ResourceType
from gateway.upstream.control import Json, from_json, kafka_topic_id
from gateway.upstream.coordinator import CoordinatorClient
from gateway.upstream.kafka_apis import ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, \
    ShareFetchResponse
from gateway.share.holder import Holder, SPKey
from gateway.share.log import UpstreamReads
from gateway.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionError, ShareSessions, TopicIdPartition
from state.api import AcknowledgementBatch, Errors, validate_acknowledgement_batches


MEMBER_ID_MAX = 36
READ_COMMITTED = "read_committed"


@dataclass
class _Request:
    """What both APIs carry, decoded: acknowledgements by partition, partitions added and forgotten."""

    acks: dict[TopicIdPartition, list[AcknowledgementBatch]]
    added: list[TopicIdPartition]
    forgotten: list[TopicIdPartition]
    topic_uuids: dict[str, uuid.UUID]
    """Kafka's Uuid text -> the UUID as the wire has it."""


class Gateway(Protocol):
    """What the share wing uses of the gateway process that holds it (`gateway.front.server.Gateway`): said here, so
    that the wing stands below the front door that builds it and imports nothing of it."""

    coordinator: CoordinatorClient
    fast_path: FastPath | None
    authorizing: bool

    @property
    def authorizer(self) -> Authorizer: ...

    async def topic_names(self, ids: list[bytes]) -> dict[bytes, str]: ...


class Shares:
    """Everything of share groups a gateway process serves: its share sessions and the share-partitions it holds.
    `reads`: the gateway's own connections to the brokers for share-partitions' logs."""

    def __init__(self, gateway: Gateway, reads: UpstreamReads) -> None:
        self._gateway = gateway
        self.sessions = ShareSessions()
        self.reads = reads
        self._names: dict[str, str] = {}
        """Topic id (Kafka's Uuid text) -> name, for the ids seen in share requests."""
        self.holder = Holder(gateway.coordinator, self.reads, self._share_view, self._names.get)

    def _share_view(self, group_id: str) -> Any:
        fast_path = self._gateway.fast_path
        view = fast_path.follower.held_view(group_id) if fast_path is not None else None
        return view if getattr(view, "kind", None) == "share" else None

    # -- the two APIs ---------------------------------------------------------------------------------------------

    async def fetch(self, connection: Any, frame: bytes, version: int, correlation: int) -> bytes:
        request = strict.decode(ShareFetchRequest, frame, version)
        started = time.monotonic()

        def answer(doc: Json, records: dict[tuple[str, int], list[bytes]] | None = None) -> bytes:
            lock_ms = self.holder.limits(request.group_id or "")[0].record_lock_duration_ms
            doc = {"throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
                   "acquisition_lock_timeout_ms": lock_ms, "responses": [], "node_endpoints": [], **doc}
            return _encode(ShareFetchResponse, version, doc, correlation, records)

        refused = self._refused(connection, request, version)
        if refused is not None:
            return answer({"error_code": refused[0], "error_message": refused[1]})
        parsed = _parse(request.topics, request.forgotten_topics_data)
        key = (connection.node_id, request.group_id, request.member_id)
        epoch = request.share_session_epoch
        try:
            session = self.sessions.fetch(key, connection, epoch, parsed.added, parsed.forgotten,
                                          acknowledging=bool(parsed.acks))
        except SessionError as exc:
            if exc.code == Errors.SHARE_SESSION_LIMIT_REACHED:
                await asyncio.sleep(max(request.max_wait_ms, 0) / 1000)
            return answer({"error_code": exc.code, "error_message": str(exc)})
        self._unwanted(request.group_id, parsed.forgotten)
        names = await self._topic_names(parsed.topic_uuids, session.partitions)
        topic_errors = self._topic_errors(connection, names, parsed.topic_uuids, session.partitions)
        partitions: dict[TopicIdPartition, Json] = {}
        acked = await self._acknowledge(request.group_id, request.member_id, parsed.acks, topic_errors,
                                        renew=getattr(request, "is_renew_ack", False))
        for tp, code in acked.items():
            partitions[tp] = {"acknowledge_error_code": code}
        records: dict[TopicIdPartition, list[bytes]] = {}
        if epoch == FINAL_EPOCH:
            await self._close(key)
        elif not getattr(request, "is_renew_ack", False):
            fetched = await self._acquire(connection, request, session.partitions, topic_errors, started)
            for tp, (acquired, data, code) in fetched.items():
                if code or acquired or epoch == INITIAL_EPOCH:
                    partitions.setdefault(tp, {}).update(
                        {"error_code": code, "acquired_records": [
                            {"first_offset": r.first, "last_offset": r.last, "delivery_count": r.delivery_count}
                            for r in acquired]})
                    records[tp] = data
        for tp, code in topic_errors.items():
            if tp in session.partitions or tp in parsed.acks:
                partitions.setdefault(tp, {})["error_code"] = code
        return answer({"responses": _by_topic(partitions, parsed.topic_uuids)}, records)

    async def acknowledge(self, connection: Any, frame: bytes, version: int, correlation: int) -> bytes:
        request = strict.decode(ShareAcknowledgeRequest, frame, version)

        def answer(doc: Json) -> bytes:
            lock_ms = self.holder.limits(request.group_id or "")[0].record_lock_duration_ms
            doc = {"throttle_time_ms": 0, "error_code": Errors.NONE, "error_message": None,
                   "acquisition_lock_timeout_ms": lock_ms, "responses": [], "node_endpoints": [], **doc}
            return _encode(ShareAcknowledgeResponse, version, doc, correlation)

        refused = self._refused(connection, request, version)
        if refused is not None:
            return answer({"error_code": refused[0], "error_message": refused[1]})
        parsed = _parse(request.topics, [])
        key = (connection.node_id, request.group_id, request.member_id)
        try:
            self.sessions.acknowledge(key, request.share_session_epoch)
        except SessionError as exc:
            return answer({"error_code": exc.code, "error_message": str(exc)})
        names = await self._topic_names(parsed.topic_uuids, {})
        topic_errors = self._topic_errors(connection, names, parsed.topic_uuids, parsed.acks)
        acked = await self._acknowledge(request.group_id, request.member_id, parsed.acks, topic_errors,
                                        renew=getattr(request, "is_renew_ack", False))
        if request.share_session_epoch == FINAL_EPOCH:
            await self._close(key)
        partitions = {tp: {"error_code": code} for tp, code in acked.items()}
        return answer({"responses": _by_topic(partitions, parsed.topic_uuids, acknowledge=True)})

    # -- connections ------------------------------------------------------------------------------------------

    def disconnected(self, connection: Hashable) -> None:
        """The connection closed: its sessions close, their members' records are released at once."""
        for session in self.sessions.disconnected(connection):
            asyncio.get_running_loop().create_task(self.holder.release_member(
                session.group_id, session.member_id, list(session.partitions)))
            self._unwanted(session.group_id, list(session.partitions))

    def produced(self, topics: list[str | bytes]) -> None:
        for topic in topics:
            name = topic if isinstance(topic, str) else self._names.get(kafka_topic_id(str(uuid.UUID(bytes=topic))))
            if name is not None:
                self.holder.produced(name)

    async def close(self) -> None:
        await self.holder.close()
        self.reads.close()

    # -- the steps ------------------------------------------------------------------------------------------------

    def _refused(self, connection: Any, request: Any, version: int) -> tuple[int, str] | None:
        """The request-level refusals before the session: the member id, v2's renew limits, READ on the group."""
        member_id = request.member_id or ""
        if not 1 <= len(member_id) <= MEMBER_ID_MAX:
            return Errors.INVALID_REQUEST, f"the member id must be 1 to {MEMBER_ID_MAX} characters"
        if getattr(request, "is_renew_ack", False) and any(
                getattr(request, f, 0) for f in ("max_bytes", "min_bytes", "max_records", "max_wait_ms")):
            return Errors.INVALID_REQUEST, "a renew acknowledgement fetches nothing: its limits must be 0"
        if self._gateway.authorizing and not self._gateway.authorizer.authorize(
                connection.session.principal, connection.session.host, AclOperation.READ, ResourceType.GROUP,
                request.group_id or ""):
            return Errors.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."
        return None

    async def _topic_names(self, uuids: dict[str, uuid.UUID], partitions: Any) -> dict[str, str]:
        ids = set(uuids) | {tid for tid, _ in partitions}
        unknown = [tid for tid in ids if tid not in self._names]
        if unknown:
            found = await self._gateway.topic_names([_uuid(tid).bytes for tid in unknown])
            for raw, name in found.items():
                self._names[kafka_topic_id(str(uuid.UUID(bytes=raw)))] = name
        return {tid: self._names[tid] for tid in ids if tid in self._names}

    def _topic_errors(self, connection: Any, names: dict[str, str], uuids: dict[str, uuid.UUID],
                      partitions: Any) -> dict[TopicIdPartition, int]:
        """UNKNOWN_TOPIC_ID for ids the cluster does not know, TOPIC_AUTHORIZATION_FAILED without READ."""
        errors = {}
        for tp in list(partitions) + [(tid, -1) for tid in uuids]:
            tid = tp[0]
            if tid not in names:
                errors[tp] = Errors.UNKNOWN_TOPIC_ID
            elif self._gateway.authorizing and not self._gateway.authorizer.authorize(
                    connection.session.principal, connection.session.host, AclOperation.READ, ResourceType.TOPIC,
                    names[tid]):
                errors[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
        return {tp: code for tp, code in errors.items() if tp[1] >= 0}

    async def _acknowledge(self, group_id: str, member_id: str, acks: dict[TopicIdPartition, list],
                           topic_errors: dict[TopicIdPartition, int], renew: bool) -> dict[TopicIdPartition, int]:
        async def one(tp: TopicIdPartition, batches: list[AcknowledgementBatch]) -> int:
            if tp in topic_errors:
                return topic_errors[tp]
            if validate_acknowledgement_batches(batches, renew) is not None:
                return Errors.INVALID_REQUEST
            return await self.holder.acknowledge((group_id, *tp), member_id, batches)

        tps = list(acks)
        codes = await asyncio.gather(*(one(tp, acks[tp]) for tp in tps))
        return dict(zip(tps, codes))

    async def _acquire(self, connection: Any, request: Any, session_partitions: Any,
                       topic_errors: dict[TopicIdPartition, int], started: float) -> dict[TopicIdPartition, tuple]:
        """(acquired records, their log batches, error) per partition of the session, after a wait of at most
        MaxWaitMs for any."""
        group_id, member_id = request.group_id, request.member_id
        tps = [tp for tp in session_partitions if tp not in topic_errors]
        out: dict[TopicIdPartition, tuple] = {tp: ([], [], 0) for tp in tps}
        keys: dict[TopicIdPartition, SPKey] = {tp: (group_id, *tp) for tp in tps}
        for key in keys.values():
            self.holder.want(key, connection.node_id)
        if not tps or request.max_records <= 0 or request.max_bytes <= 0:
            return out
        first = request.share_session_epoch % len(tps)
        order = tps[first:] + tps[:first]
        per_bytes = max(request.max_bytes // len(tps), 1)
        record_limit = getattr(request, "share_acquire_mode", 0) == 1
        _, config = self.holder.limits(group_id)
        isolation = 1 if (config or {}).get("isolation_level") == READ_COMMITTED else 0
        deadline = started + max(request.max_wait_ms, 0) / 1000
        while True:
            # waited on before anything is looked at: a change while the look awaits wakes the wait that follows
            waiter = self.holder.waiter(list(keys.values()))
            try:
                # MinBytes 1 (the clients' default): acquiring is the count, each log read once
                if request.min_bytes > 1 and deadline > time.monotonic() and not await self._enough(
                        keys, order, request.min_bytes, per_bytes, isolation):
                    await self._wait(waiter, keys, deadline)
                    continue
                budget = request.max_records
                got = False
                for tp in order:
                    if budget <= 0:
                        break
                    held = self.holder.serving(keys[tp])
                    if held is None:
                        continue
                    try:
                        acquired, batches, code = await self.holder.acquire(
                            held, member_id, budget, request.batch_size or request.max_records, per_bytes,
                            record_limit, isolation)
                    except (ConnectionError, OSError, asyncio.TimeoutError):
                        acquired, batches, code = [], [], Errors.NOT_LEADER_OR_FOLLOWER
                    if acquired or code:
                        out[tp] = (acquired, [b.data for b in batches], code)
                        got = True
                        budget -= sum(r.last - r.first + 1 for r in acquired)
                if got or deadline <= time.monotonic() or (request.min_bytes <= 0 and any(
                        held is not None and self.holder.acquirable(held)
                        for held in map(self.holder.serving, keys.values()))):
                    return out
                # nothing to acquire (or what was counted went to another fetch in between): wait
                await self._wait(waiter, keys, deadline)
            finally:
                waiter.cancel()

    async def _enough(self, keys: dict[TopicIdPartition, SPKey], order: list[TopicIdPartition], min_bytes: int,
                      per_bytes: int, isolation: int) -> bool:
        """Kafka's `tryComplete` for a MinBytes above 1: MinBytes are there to acquire from the share-partitions
        served here that can be acquired from (or a log read failed)."""
        total = 0
        for tp in order:
            held = self.holder.serving(keys[tp])
            if held is None or not self.holder.acquirable(held):
                continue
            try:
                size = await self.holder.fetchable_bytes(held, per_bytes, isolation)
            except (ConnectionError, OSError, asyncio.TimeoutError):
                return True
            if size is None:
                return True
            total += size
            if total >= min_bytes:
                return True
        return False

    async def _wait(self, waiter: asyncio.Future, keys: dict[TopicIdPartition, SPKey], deadline: float) -> None:
        """Until `waiter` (any of the share-partitions changed or its log grew), at most until `deadline`."""
        self.holder.watch_logs(list(keys.values()))
        try:
            await asyncio.wait_for(asyncio.shield(waiter), max(deadline - time.monotonic(), 0))
        except asyncio.TimeoutError:
            pass

    async def _close(self, key: tuple) -> None:
        session = self.sessions.close(key)
        if session is not None:
            await self.holder.release_member(session.group_id, session.member_id, list(session.partitions))
            self._unwanted(session.group_id, list(session.partitions))

    def _unwanted(self, group_id: str, partitions: list[TopicIdPartition]) -> None:
        for tp in partitions:
            if self.sessions.sessions_of(group_id, tp) == 0:
                self.holder.unwanted((group_id, *tp))


def _uuid(topic_id: str) -> uuid.UUID:
    import base64

    return uuid.UUID(bytes=base64.urlsafe_b64decode(topic_id + "=="))


def _parse(topics: Any, forgotten: Any) -> _Request:
    """Acknowledgements and partitions by (topic id as Kafka's Uuid text, partition), duplicate ids merged."""
    acks: dict[TopicIdPartition, list[AcknowledgementBatch]] = {}
    added: dict[TopicIdPartition, None] = {}
    uuids: dict[str, uuid.UUID] = {}
    for topic in topics or ():
        tid = kafka_topic_id(str(topic.topic_id))
        uuids[tid] = topic.topic_id
        for p in topic.partitions or ():
            tp = (tid, p.partition_index)
            added[tp] = None
            batches = [AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                       for b in p.acknowledgement_batches or ()]
            if batches:
                acks.setdefault(tp, []).extend(batches)
    gone: dict[TopicIdPartition, None] = {}
    for topic in forgotten or ():
        tid = kafka_topic_id(str(topic.topic_id))
        uuids.setdefault(tid, topic.topic_id)
        for p in topic.partitions or ():
            gone[(tid, p)] = None
    return _Request(acks, list(added), list(gone), uuids)


def _by_topic(partitions: dict[TopicIdPartition, Json], uuids: dict[str, uuid.UUID],
              acknowledge: bool = False) -> list[Json]:
    topics: dict[str, list[Json]] = {}
    for (tid, index), fields in partitions.items():
        entry = {"partition_index": index, "error_code": fields.get("error_code", Errors.NONE),
                 "error_message": None, "current_leader": {"leader_id": -1, "leader_epoch": -1}}
        if not acknowledge:
            entry.update({"acknowledge_error_code": fields.get("acknowledge_error_code", Errors.NONE),
                          "acknowledge_error_message": None, "records": "",
                          "acquired_records": fields.get("acquired_records", [])})
        topics.setdefault(tid, []).append(entry)
    return [{"topic_id": str(uuids.get(tid) or _uuid(tid)), "partitions": entries} for tid, entries in topics.items()]


def _encode(cls: Any, version: int, doc: Json, correlation: int,
            records: dict[TopicIdPartition, list[bytes]] | None = None) -> bytes:
    """The response with its header; the record bytes are set on the built message (never base64'd through
    JSON)."""
    message = from_json(cls, version, doc)
    if records:
        for topic in message.responses:
            tid = kafka_topic_id(str(topic.topic_id))
            for p in topic.partitions:
                data = records.get((tid, p.partition_index))
                if data:
                    p.records = b"".join(data)
    message.with_header(correlation_id=correlation)
    return bytes(message.encode(header=True))
