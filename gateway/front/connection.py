"""One client connection: requests read in order, each answered locally or forwarded, answers written in order.

Kafka clients match answers to requests by order as well as correlation id, so every request takes a slot in a
queue when it is read, and a writer task writes the slots' answers in that order, whichever finishes first: a
JoinGroup parked in the coordinator holds back the answers behind it on that connection, as a Kafka broker, which
handles one request per connection at a time, would hold them.

- ApiVersions, SASL, FindCoordinator (groups) and the group APIs are answered by the gateway: heartbeats and
  commits from the group's view where it decides (`gateway.fast.fast_path`), the rest by the coordinator; ShareFetch and
  ShareAcknowledge by the share-partitions this process holds (`gateway.share`), whose sessions close with the
  connection.
- Everything else goes to this listener's upstream broker unchanged, on the connection's own upstream connection.
  Answers that name brokers (Metadata, DescribeCluster, FindCoordinator for transactions, Fetch v16+ and Produce
  v10+ when they carry node endpoints) get the gateway's listeners instead; all others go back byte for byte.
- What breaks the protocol (a frame too large or too short, an API or version not advertised, a request that does
  not decode, a request before authentication) closes the connection, as a Kafka broker closes it; so does an
  upstream connection that dies under a request. Nothing a client sends reaches beyond its own connection.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import msgspec
from kafka.protocol.admin.cluster import DescribeClusterResponse
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataResponse
from kafka.protocol.producer.produce import ProduceResponse
from kafka.protocol.producer.transaction import EndTxnRequest, EndTxnResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

from gateway.security import apis as security_apis, authz
from gateway.upstream import group_configs, peek, transactions
from gateway.security.acl import ANONYMOUS, AclOperation, ResourceType
from gateway.upstream.control import GROUP_APIS, GroupApi, Json, control_requests, from_json, to_json
from gateway.front import profile
from gateway.protocol import strict
from gateway.protocol.frames import FrameError, framed, read_frame, request_prefix
from gateway.security.group_authz import GROUP_AUTHORIZATION_FAILED, GROUP_MESSAGE, GroupAccess, Session, group_access
from gateway.security.authentication import MAX_RECEIVE_BYTES, Exchange
from gateway.security.scram import AuthenticationFailed
from gateway.upstream.broker import Upstream
from gateway.upstream.routes import NodeConnections
from gateway.upstream.coordinator import not_written
from gateway.front.server import INTERVAL_TIMED
from state.api import Errors

if TYPE_CHECKING:
    from gateway.front.server import Gateway

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 1000
"""Requests of one connection read ahead of their answers; beyond, the gateway stops reading from it."""
GROUP_COORDINATOR = 0
UNSUPPORTED_SASL_MECHANISM = 33
SASL_AUTHENTICATION_FAILED = 58
SHARE_FETCH, SHARE_ACKNOWLEDGE = 78, 79
_BEFORE_AUTHENTICATION = frozenset({ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate})
FAST_APIS = frozenset({"Heartbeat", "ConsumerGroupHeartbeat", "ShareGroupHeartbeat", "OffsetCommit"})
"""Group requests a gateway may answer from the group's view (`gateway.fast.fast_path`; OffsetFetch apart: one request
may name several groups)."""


@dataclass(frozen=True)
class Closing:
    """An answer after which the connection is closed (a failed authentication)."""

    payload: bytes


class ClientConnection:
    def __init__(self, gateway: "Gateway", node_id: int | None, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.gateway = gateway
        self.node_id = node_id
        self._reader, self._writer = reader, writer
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.client_host = "/" + (peer[0] if peer else "")
        self._authenticator = gateway.settings.authenticator
        self.principal: str | None = None
        self._authenticated = self._authenticator is None
        self._handshake_version: int | None = None
        self._exchange: Exchange | None = None
        self._slots: deque[asyncio.Future] = deque()
        """The answers of the requests read, in the order read: each is written once it and all before it are."""
        self._room: asyncio.Future | None = None
        """Set while the reader waits for fewer than MAX_IN_FLIGHT answers to be pending."""
        self._closed = False
        self._upstream: Upstream | None = None
        self._txn_connections: NodeConnections | None = None
        """This connection's own upstream connections for its TxnOffsetCommits' AddPartitionsToTxn (to the transaction
        coordinator) and writes (to the partition's leader), one per broker, opened on first use."""
        self._tasks: set[asyncio.Task] = set()

    async def serve(self) -> None:
        try:
            while not self._closed:
                limit = self.gateway.settings.max_request_bytes if self._authenticated else MAX_RECEIVE_BYTES
                frame = await read_frame(self._reader, limit)
                if frame is None:
                    break
                if self.gateway.profile is None:
                    slot = await self._handle(frame)
                else:
                    slot = await self._profiled(frame)
                if slot is not None:
                    self._queue(slot)
                if len(self._slots) >= MAX_IN_FLIGHT or self._writer.transport.is_closing():
                    await self._wait_for_room()
                else:
                    await self._writer.drain()  # returns at once unless the client reads its answers slower
        except FrameError as exc:
            log.info("closing %s: %s", self.peer, exc)
        except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
            log.info("closing %s: %s", self.peer, exc or type(exc).__name__)
        except Exception:  # noqa: BLE001 - a request that breaks the decoder closes its connection, nothing else
            log.warning("closing %s: its request could not be handled", self.peer, exc_info=True)
        finally:
            self._closed = True
            self._slots.clear()
            for task in list(self._tasks):
                task.cancel()
            self.gateway.share.disconnected(self)
            if self._upstream is not None:
                self._upstream.close()
            if self._txn_connections is not None:
                self._txn_connections.close()
            self._writer.close()

    async def _profiled(self, frame: bytes) -> Awaitable[Any] | None:
        """`_handle`, the request's kind and time recorded in the gateway's profile (`gateway.front.profile`)."""
        started = time.perf_counter()
        if len(frame) < 8 or (self._handshake_version == 0 and not self._authenticated):
            return await self._handle(frame)  # no header to name it by
        api_key, version, _ = request_prefix(frame)
        route = profile.Route(_ROUTES.get(api_key, "upstream"))
        token = profile.ROUTE.set(route)
        try:
            slot = await self._handle(frame)
        finally:
            profile.ROUTE.reset(token)
        if slot is None:
            return None
        return self.gateway.profile.timed(slot, api_key, version, len(frame), route, started)

    def _queue(self, slot: Awaitable[Any]) -> None:
        """Take the answer's place in the connection's order; written by `_write_ready` (no task of its own: an
        answer ready at once, or completed by a callback, is written in the same step)."""
        future = asyncio.ensure_future(slot)
        self._slots.append(future)
        if len(self._slots) == 1:
            if future.done():
                self._write_ready()
            else:
                future.add_done_callback(self._write_ready)

    def _write_ready(self, _: Any = None) -> None:
        """Write the answers at the head of the order that are ready; wait for the first that is not."""
        slots = self._slots
        while slots and not self._closed:
            slot = slots[0]
            if not slot.done():
                slot.add_done_callback(self._write_ready)
                return
            slots.popleft()
            if slot.cancelled():
                self._close("an answer was cancelled")
                return
            error = slot.exception()
            if error is not None:  # the upstream died or an answer could not be built
                self._close(str(error) or type(error).__name__)
                return
            answer = slot.result()
            if answer is None:
                continue
            closing = isinstance(answer, Closing)
            self._writer.writelines(framed(answer.payload if closing else answer))
            if closing:
                self._close(None)
                return
        if self._room is not None and not self._room.done() and len(slots) < MAX_IN_FLIGHT:
            self._room.set_result(None)

    async def _wait_for_room(self) -> None:
        while len(self._slots) >= MAX_IN_FLIGHT and not self._closed:
            self._room = asyncio.get_running_loop().create_future()
            await self._room
        if not self._closed:
            await self._writer.drain()

    def _close(self, reason: str | None) -> None:
        if reason is not None:
            log.info("closing %s: %s", self.peer, reason)
        self._closed = True
        self._slots.clear()
        self._writer.close()
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    # -- dispatch ------------------------------------------------------------------------------------------------

    async def _handle(self, frame: bytes) -> Awaitable[Any] | None:
        """The slot of one request (None: it gets no answer)."""
        if self._handshake_version == 0 and not self._authenticated:
            return self._ready(self._raw_token(frame))
        api_key, version, correlation = request_prefix(frame)
        if not self._authenticated and api_key not in _BEFORE_AUTHENTICATION:
            raise FrameError(f"API {api_key} before SASL authentication")
        if api_key == ApiKey.ApiVersions:
            return self._ready(self._api_versions(frame, version, correlation))
        if api_key in (ApiKey.SaslHandshake, ApiKey.SaslAuthenticate):
            if self._authenticator is None:
                raise FrameError("SASL on a listener without SASL")
            return self._ready(self._sasl(api_key, frame, version, correlation))
        lo, hi = self.gateway.versions.get(api_key, (0, -1))
        if not lo <= version <= hi:
            raise FrameError(f"API {api_key} v{version} is not served (advertised: v{lo}-v{hi})")
        api = GROUP_APIS.get(api_key)
        if api is not None:
            return self._group(api, frame, version, correlation)
        if api_key == SHARE_FETCH:
            return self._spawn(self.gateway.share.fetch(self, frame, version, correlation))
        if api_key == SHARE_ACKNOWLEDGE:
            return self._spawn(self.gateway.share.acknowledge(self, frame, version, correlation))
        if api_key == ApiKey.FindCoordinator:
            request = strict.decode(FindCoordinatorRequest, frame, version)
            if request.key_type == GROUP_COORDINATOR:
                return self._spawn(self._find_coordinator(request, version, correlation))
        if api_key in security_apis.ACL_APIS and not self.gateway.authorizing:
            return self._ready(security_apis.security_disabled(api_key, frame, version, correlation))
        security = self.gateway.security
        if security is not None and api_key in security_apis.served(self.gateway.authorizing):
            return self._spawn(security_apis.answer(api_key, self._authz(), security, frame, version, correlation))
        configs = None
        if api_key in group_configs.APIS:
            # GROUP resources are the coordinator's; the rest goes on to the cluster, the answers merged
            configs = group_configs.split(api_key, frame, version, correlation, self._group_config_call,
                                          self._group_config_allowed)
            if configs is not None:
                if configs.rest is None:
                    return self._spawn(configs.answer(None))
                frame = configs.rest
        finish = None
        if self.gateway.authorizing:
            # Inline, not in a task: forwarded requests must reach the broker in the client's order.
            plan = await authz.plan(self._authz(), api_key, frame, version, correlation)
            if plan is not None:
                if plan.close:
                    raise FrameError(plan.close)
                if plan.answer is not None:
                    if configs is not None:
                        return self._spawn(configs.answer(self._ready(plan.answer)))
                    return self._ready(plan.answer)
                frame, finish = plan.frame, plan.finish
        if api_key == ApiKey.InitProducerId:
            self.gateway.note_transaction_timeout(frame, version)
        if api_key == ApiKey.EndTxn and self.gateway.fast_path is not None:
            # Inline: the client's later requests wait, as Kafka's broker answers a connection's requests in order.
            request = strict.decode(EndTxnRequest, frame, version)
            refusal = await self.gateway.fast_path.txn_settled(request.transactional_id, request.producer_id,
                                                               request.producer_epoch, request.committed)
            if refusal:
                return self._ready(_encode(from_json(EndTxnResponse, version, {"throttle_time_ms": 0,
                                                                               "error_code": refusal}),
                                           version, correlation))
        if api_key == ApiKey.Produce and peek.produce_acks(frame, version) == 0:
            await self._forward(frame, correlation, None, version, expect_response=False)
            return None
        rewrite = api_key in _ADDRESSES and version >= _ADDRESSES_FROM.get(api_key, 0)
        answer = await self._forward(frame, correlation, api_key if rewrite else None, version)
        if api_key == ApiKey.Produce and self.gateway.share.holder.waiting:
            # a share fetch waits on some log: read it as soon as this produce is answered
            answer = self._spawn(self._produced(answer, peek.produce(frame, version).topics))
        if finish is not None:
            answer = self._spawn(self._finish(answer, finish))
        return answer if configs is None else self._spawn(configs.answer(answer))

    def _group_config_call(self, group_id: str, body: Json) -> Awaitable[Json]:
        return self.gateway.coordinator.call(group_id, body, self.gateway.timeout_s(body["api"], body))

    def _group_config_allowed(self, operation: str, group_id: str) -> bool:
        if not self.gateway.authorizing:
            return True
        return self.gateway.authorizer.authorize(self.session.principal, self.session.host,
                                                 AclOperation[operation], ResourceType.GROUP, group_id)

    async def _finish(self, answer: Awaitable[bytes], finish: Callable[[bytes], bytes]) -> bytes:
        return finish(await answer)

    async def _produced(self, answer: Awaitable[bytes], topics: list[str | bytes]) -> bytes:
        payload = await answer
        self.gateway.share.produced(topics)
        return payload

    @property
    def session(self) -> Session:
        """Who this connection is, for the ACLs: its principal (User:ANONYMOUS without SASL) and IP address."""
        return Session(self.principal or ANONYMOUS, self.client_host[1:])

    def _authz(self) -> authz.Context:
        return authz.Context(self.gateway.authorizer, self.session, self.gateway.topic_names)

    def _ready(self, answer: Any) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        future.set_result(answer)
        return future

    def _spawn(self, work: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- forwarding ----------------------------------------------------------------------------------------------

    async def _forward(self, frame: bytes, correlation: int, rewrite: int | None, version: int,
                       expect_response: bool = True) -> Awaitable[Any] | None:
        """Send the frame upstream as it is; `rewrite`: the API key whose answer names brokers (`_rewrite`)."""
        upstream = await self._upstream_connection()
        answer = upstream.forward(frame, correlation, expect_response)
        if answer is None or rewrite is None:
            return answer
        return self._spawn(self._rewrite(rewrite, answer, version))

    async def _upstream_connection(self) -> Upstream:
        if self._upstream is not None and not self._upstream.closed:
            return self._upstream
        s = self.gateway.settings
        errors = []
        for host, port in self.gateway.upstream_addresses(self.node_id):
            try:
                self._upstream = await Upstream.connect(host, port, s.upstream, s.connect_timeout_ms / 1000)
                return self._upstream
            except (OSError, asyncio.TimeoutError, ConnectionError) as exc:
                errors.append(f"{host}:{port}: {exc or type(exc).__name__}")
        raise ConnectionError(f"no upstream broker for node {self.node_id}: {'; '.join(errors) or 'unknown node'}")

    async def _rewrite(self, api_key: int, answer: Awaitable[bytes], version: int) -> bytes:
        """Put the gateway's listeners where an upstream answer names brokers, learning the brokers on the way.
        An answer that names none (a Fetch or Produce without KIP-951 endpoints: nearly all) goes back as it
        came."""
        payload = await answer
        cls, named = _ADDRESSES[api_key]
        response = cls.decode(payload, version=version, header=True)
        entries = [(node_id, entry) for node_id, entry in named(response, version) if node_id >= 0]
        if not entries:
            return payload
        self.gateway.learn_brokers((node_id, entry.host, entry.port) for node_id, entry in entries)
        for node_id, entry in entries:
            entry.host, entry.port = await self.gateway.node_address(node_id)
        return bytes(response.encode(header=True))

    # -- answered here -------------------------------------------------------------------------------------------

    def _api_versions(self, frame: bytes, version: int, correlation: int) -> bytes:
        api_keys = [{"api_key": k, "min_version": lo, "max_version": hi}
                    for k, (lo, hi) in self.gateway.versions.items()]
        if version > ApiVersionsRequest.max_version:
            # Kafka answers a version it does not know at v0 with its versions, so the client retries lower.
            return _encode(from_json(ApiVersionsResponse, 0, {"error_code": Errors.UNSUPPORTED_VERSION,
                                                              "api_keys": api_keys}), 0, correlation)
        ApiVersionsRequest.decode(frame, version=version, header=True)
        doc = {**self.gateway.features, "error_code": Errors.NONE, "api_keys": api_keys, "throttle_time_ms": 0}
        return _encode(from_json(ApiVersionsResponse, version, doc), version, correlation)

    async def _find_coordinator(self, request: Any, version: int, correlation: int) -> bytes:
        keys = request.coordinator_keys if version >= 4 else [request.key]
        entries = []
        for key in keys:
            node_id = self.gateway.coordinator_for(key)
            if self.gateway.authorizing and not authz.group_coordinator_allowed(self.gateway.authorizer,
                                                                                self.session, key):
                entries.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                "error_code": GROUP_AUTHORIZATION_FAILED, "error_message": GROUP_MESSAGE})
            elif node_id is None:
                entries.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                "error_code": Errors.COORDINATOR_NOT_AVAILABLE, "error_message": "no broker is known"})
            else:
                host, port = await self.gateway.node_address(node_id)
                entries.append({"key": key, "node_id": node_id, "host": host, "port": port, "error_code": Errors.NONE,
                                "error_message": None})
        doc = {"throttle_time_ms": 0, "coordinators": entries} if version >= 4 else {"throttle_time_ms": 0,
                                                                                     **entries[0]}
        return _encode(from_json(FindCoordinatorResponse, version, doc), version, correlation)

    def _group(self, api: GroupApi, frame: bytes, version: int, correlation: int) -> asyncio.Future:
        """The slot of a group request. A commit the group's view answers (`gateway.fast.fast_path`) is decided here
        and answered by callbacks once its append is acknowledged, with no task of its own; the rest in a task."""
        request = strict.decode(api.request, frame, version)
        doc = to_json(request, version)
        # Authorization, before anything reaches the control topic (or is answered from the group view).
        access = (group_access(self.gateway.authorizer, self.session, api.name, version, doc)
                  if self.gateway.authorizing else GroupAccess(doc))
        if access.request is None:
            return self._ready(_answer(api.response, version, access.answer, correlation))
        fast = _UNASKED
        if api.name in FAST_APIS and self.gateway.fast_path is not None:
            (body,) = control_requests(api, version, access.request, self.principal)
            fast = self.gateway.fast_path.answer(api.name, body)
            # a future: a heartbeat answered at once, or a commit the view accepted, answered once appended
            if asyncio.isfuture(fast) and fast.done() and fast.exception() is None and fast.result() is None:
                fast = None  # the view does not decide it: the coordinator does
            elif asyncio.isfuture(fast) and (fast.done() or api.name == "OffsetCommit"):
                return self._from_view(fast, api, version, doc, access, correlation)
        return self._spawn(self._group_rest(api, request, version, doc, access, correlation, fast))

    def _from_view(self, fast: asyncio.Future, api: GroupApi, version: int, doc: Json, access: GroupAccess,
                   correlation: int) -> asyncio.Future:
        """The answer the view gave, once `fast` is done (a commit's: once appended): built in a callback."""
        slot = asyncio.get_running_loop().create_future()

        def answered(done: asyncio.Future) -> None:
            if slot.done():
                return
            if done.cancelled():
                slot.cancel()
                return
            try:
                merged = done.result()
                profile.routed("view")
                self.gateway.heard_answer(api.name, doc, merged)
                slot.set_result(_answer(api.response, version, access.complete(merged), correlation))
            except Exception as exc:  # noqa: BLE001 - the connection closes, as for a task that failed
                slot.set_exception(exc)

        if fast.done():
            answered(fast)
        else:
            fast.add_done_callback(answered)
        return slot

    async def _group_rest(self, api: GroupApi, request: Any, version: int, doc: Json, access: GroupAccess,
                          correlation: int, fast: Any) -> bytes:
        merged = await self._group_answer(api, request, version, access.request, fast)
        self.gateway.heard_answer(api.name, doc, merged)
        return _answer(api.response, version, access.complete(merged), correlation)

    async def _group_answer(self, api: GroupApi, request: Any, version: int, doc: Json, fast: Any) -> Json:
        """The answer to an authorized group request, as JSON: from the group's view where it decides (a heartbeat
        or a commit, `gateway.fast.fast_path`), else from the coordinator, one control request per group.
        `fast`: the view's answer if the caller asked it already (else `_UNASKED`)."""
        coordinator, fast_path = self.gateway.coordinator, self.gateway.fast_path
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.gateway.timeout_s(api.name, doc)
        if api.name in FAST_APIS and fast_path is not None:
            if fast is _UNASKED:
                (body,) = control_requests(api, version, doc, self.principal)
                fast = fast_path.answer(api.name, body)
            if fast is not None and api.name in INTERVAL_TIMED:
                # a held heartbeat's wait for the view counts against its member's interval (`INTERVAL_TIMED`)
                fast = _within(fast, deadline - loop.time())
            answer = None if fast is None else await fast
            if answer is not None:
                profile.routed("view")
                return answer
        if api.name == "OffsetFetch" and fast_path is not None:
            bodies = control_requests(api, version, doc, self.principal)
            fetched = await asyncio.gather(*(fast_path.offset_fetch(body) for body in bodies))
            if all(answer is not None for answer in fetched):
                profile.routed("view")
                return api.merge(doc, list(fetched), version)
        timeout_s = max(deadline - loop.time(), MIN_WAIT_S)
        if api.name == "ListGroups":
            (body,) = control_requests(api, version, doc, self.principal)
            answer = await coordinator.call(self.gateway.list_groups_key, body, timeout_s)
            # Each node lists the groups it is named coordinator of, as Kafka's brokers do; the bootstrap all.
            answer["groups"] = [g for g in answer.get("groups", [])
                                if self.node_id is None or self.gateway.coordinator_for(g["group_id"]) == self.node_id]
            return answer
        extra = None
        if api.name in _CLIENT_NAMED:  # our extension: Kafka takes these from the header and the socket
            extra = {"client_id": request.header.client_id or "", "client_host": self.client_host}
        if api.name == "TxnOffsetCommit":
            return await self._txn_offset_commit(api, version, doc, timeout_s)
        bodies = control_requests(api, version, doc, self.principal, extra)
        if fast_path is not None:
            for body in bodies:
                fast_path.before_request(api.name, body)
        try:
            if api.name == "JoinGroup" and self.gateway.member_id_round is not None:
                named = await self.gateway.member_id_round.answer(version, bodies[0])
                if named is not None:
                    profile.routed("view")
                    return named
            answers = await asyncio.gather(*(coordinator.call(body["group_id"], body, timeout_s) for body in bodies))
        finally:
            if fast_path is not None:
                for body in bodies:
                    fast_path.after_request(api.name, body)
        return api.merge(doc, list(answers), version)

    async def _txn_offset_commit(self, api: GroupApi, version: int, doc: Json, timeout_s: float) -> Json:
        """A TxnOffsetCommit joins the producer's transaction (`gateway.upstream.transactions`): the group's
        control-topic partition is added to it (at the transaction coordinator) and the request written there (at
        the partition's leader) with the producer's id and epoch, on this connection's own connections to the
        upstream; what the upstream refuses is the answer on every partition."""
        if self._txn_connections is None:
            s = self.gateway.settings
            self._txn_connections = NodeConnections(self.gateway.upstream_addresses, s.upstream,
                                                    s.connect_timeout_ms / 1000)
        connections, partitions = self._txn_connections, self.gateway.control_partitions
        (body,) = control_requests(api, version, doc, self.principal)
        timeout_ms = self.gateway.transaction_timeouts.get(doc["transactional_id"])
        if timeout_ms is not None:  # when the query's open transactions say it is past its timeout
            body["transaction_timeout_ms"] = timeout_ms
        try:
            error = await asyncio.wait_for(partitions.add(connections, doc, timeout_s), timeout_s)
        except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
            return not_written(body, exc)
        if error:
            return transactions.refused(doc, error)
        key = doc["group_id"].encode("utf-8")

        async def write(value: bytes) -> transactions.Written:
            return await asyncio.wait_for(partitions.write(connections, doc, key, value, timeout_s), timeout_s)

        fast_path = self.gateway.fast_path
        answered = None if fast_path is None else fast_path.txn_commit(body, write)
        if answered is not None:
            return await answered
        return await self.gateway.coordinator.call_written(doc["group_id"], body, timeout_s, write)

    # -- SASL ------------------------------------------------------------------------------------------------

    def _sasl(self, api_key: int, frame: bytes, version: int, correlation: int) -> bytes | Closing:
        if self._authenticated:
            raise FrameError("SASL after authentication (re-authentication is not supported)")
        if api_key == ApiKey.SaslHandshake:
            if self._exchange is not None:
                raise FrameError("a second SaslHandshake")
            request = SaslHandshakeRequest.decode(frame, version=version, header=True)
            self._exchange = self._authenticator.start(request.mechanism)
            enabled = self._authenticator.mechanisms
            if self._exchange is None:
                # Kafka answers with the mechanisms it has, then closes the connection.
                log.info("closing %s: SASL mechanism %r is not enabled", self.peer, request.mechanism)
                return Closing(_encode(SaslHandshakeResponse[version](
                    error_code=UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled), version, correlation))
            self._handshake_version = version
            return _encode(SaslHandshakeResponse[version](error_code=Errors.NONE, mechanisms=enabled), version,
                           correlation)
        if self._handshake_version != 1:
            raise FrameError("SaslAuthenticate without a SaslHandshake v1")
        request = SaslAuthenticateRequest.decode(frame, version=version, header=True)
        try:
            challenge = self._exchange.evaluate(bytes(request.auth_bytes))
        except AuthenticationFailed as exc:
            log.info("authentication failed from %s: %s", self.peer, exc)
            response = SaslAuthenticateResponse[version](
                error_code=SASL_AUTHENTICATION_FAILED, error_message=str(exc), auth_bytes=b"", session_lifetime_ms=0)
            return Closing(_encode(response, version, correlation))
        self._authenticate_if_complete()
        response = SaslAuthenticateResponse[version](error_code=Errors.NONE, error_message=None,
                                                     auth_bytes=challenge, session_lifetime_ms=0)
        return _encode(response, version, correlation)

    def _raw_token(self, token: bytes) -> bytes:
        """SaslHandshake v0: tokens come unframed by Kafka's headers, and so do the answers; a failure closes."""
        try:
            challenge = self._exchange.evaluate(token)
        except AuthenticationFailed as exc:
            raise FrameError(str(exc)) from None
        self._authenticate_if_complete()
        return challenge

    def _authenticate_if_complete(self) -> None:
        if self._exchange.complete:
            self._authenticated, self.principal = True, self._exchange.principal


_ROUTES = {**{key: "coordinator" for key in GROUP_APIS}, SHARE_FETCH: "gateway", SHARE_ACKNOWLEDGE: "gateway",
           ApiKey.ApiVersions: "gateway", ApiKey.SaslHandshake: "gateway", ApiKey.SaslAuthenticate: "gateway",
           ApiKey.FindCoordinator: "gateway"}
"""Who answers a request of each API, until its handling says otherwise (`gateway.front.profile`)."""

_UNASKED = object()
"""`_group_answer`'s `fast` when the view was not asked yet."""

MIN_WAIT_S = 0.05
"""The least a forwarded group request waits for the coordinator, when the view's hold used up its budget."""


async def _within(answer: Awaitable[Json | None], timeout_s: float) -> Json | None:
    """The view's answer, or None (ask the coordinator) when it is not there within `timeout_s`."""
    try:
        return await asyncio.wait_for(answer, max(timeout_s, 0))
    except asyncio.TimeoutError:
        return None


_CLIENT_NAMED = frozenset({"JoinGroup", "ConsumerGroupHeartbeat", "ShareGroupHeartbeat"})
"""The requests whose member the coordinator shows with the client's id and host (DescribeGroups,
ConsumerGroupDescribe)."""

_ADDRESSES: dict[int, tuple[Any, Callable[[Any, int], list[tuple[int, Any]]]]] = {
    ApiKey.Metadata: (MetadataResponse, lambda r, v: [(b.node_id, b) for b in r.brokers]),
    ApiKey.DescribeCluster: (DescribeClusterResponse, lambda r, v: [(b.broker_id, b) for b in r.brokers]),
    ApiKey.FindCoordinator: (FindCoordinatorResponse,
                             lambda r, v: [(c.node_id, c) for c in (r.coordinators if v >= 4 else [r])]),
    ApiKey.Fetch: (FetchResponse, lambda r, v: [(e.node_id, e) for e in r.node_endpoints]),
    ApiKey.Produce: (ProduceResponse, lambda r, v: [(e.node_id, e) for e in r.node_endpoints]),
}
"""API key -> (response class, the (node id, struct with host and port) entries of an answer that name brokers)."""
_ADDRESSES_FROM = {ApiKey.Fetch: 16, ApiKey.Produce: 10}
"""Versions before these carry no node endpoints: their answers are never decoded (the hot path)."""


_ANSWERS: dict[tuple[int, int, bytes], bytes] = {}
"""Group answers already encoded, by (API key, version, the answer as JSON), without their correlation id: a member's
heartbeats, and its commits of the same partitions, are answered with the same bytes each time, and the message
classes take about 50 us to build them (a third of a commit's time in the gateway)."""
_ANSWERS_KEPT = 4096
_ANSWER_KEY_MAX_BYTES = 1024
"""Larger answers (DescribeGroups, OffsetFetch of many partitions) are rare and vary: built each time."""
_CORRELATION = struct.Struct(">i")


def _answer(response: Any, version: int, doc: Json, correlation: int) -> bytes:
    """A group API's answer `doc` (control JSON) as the response of `version` with its header."""
    key = msgspec.json.encode(doc)
    if len(key) > _ANSWER_KEY_MAX_BYTES:
        return _encode(from_json(response, version, doc), version, correlation)
    cached = _ANSWERS.get((response.API_KEY, version, key))
    if cached is None:
        if len(_ANSWERS) >= _ANSWERS_KEPT:
            _ANSWERS.clear()
        cached = _ANSWERS[(response.API_KEY, version, key)] = _encode(from_json(response, version, doc), version, 0)
    return _CORRELATION.pack(correlation) + cached[4:]  # the response header begins with the correlation id


def _encode(message: Any, version: int, correlation: int) -> bytes:
    """A response of `version` (set when it was built) with its header; `encode(version=...)` would fail on a
    response header in kafka-python 3.0.12."""
    if message.API_VERSION != version:
        raise ValueError(f"{type(message).__name__} was built at version {message.API_VERSION}, not {version}")
    message.with_header(correlation_id=correlation)
    return bytes(message.encode(header=True))
