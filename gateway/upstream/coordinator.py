"""The coordinator as the gateway sees it: control requests out, their answers awaited on the event loop.

Requests are written by the gateway's one appender (`gateway.upstream.appender`); answers are read with the client
library's Kafka transport (matched by `request_id`, read from the response partitions of the keys asked about), with
every response partition watched from the start, so sending never waits for the reader. A request the coordinator
does not answer within its budget is answered by the gateway with COORDINATOR_NOT_AVAILABLE, as Kafka's coordinator
answers a write that timed out: clients then look the coordinator up again and retry, which is what they do when a
broker's coordinator moves. A late answer is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Awaitable, Callable

from client.transport import KafkaTransport, encode_request
from gateway.upstream.appender import Appender
from gateway.upstream.broker import UpstreamSecurity
from gateway.upstream.control import Json, unanswered
from state.api import Errors, append_error

log = logging.getLogger(__name__)


class CoordinatorClient:
    def __init__(self, transport: Any, appender: Any, client_id: str) -> None:
        """`transport` reads the answers (`client.transport.KafkaTransport`: `expect`, `forget`, `close`),
        `appender` writes the requests (`Appender`: `append`, `close`); `connect` makes both for a cluster."""
        self.client_id = client_id
        self._transport = transport
        self.appender = appender

    @classmethod
    def connect(cls, bootstrap_servers: str, requests_topic: str, responses_topic: str, kafka_config: dict[str, Any],
                loop: asyncio.AbstractEventLoop, fetch_max_wait_ms: int = 50,
                ready_timeout_s: float = 60.0, upstream: UpstreamSecurity | None = None) -> "CoordinatorClient":
        """The coordinator behind the cluster's control topics. Blocks until the response topic is being read
        (call it before the event loop serves clients). `kafka_config`: the kafka-python settings the answers are
        read with; `upstream`: how the appender reaches the brokers (the same security, `cli.upstream_security`)."""
        client_id = f"groupcoord-gateway-{uuid.uuid4().hex[:8]}"
        transport = KafkaTransport(bootstrap_servers, requests_topic, responses_topic, client_id=client_id,
                                   fetch_max_wait_ms=fetch_max_wait_ms, producing=False, **kafka_config)
        transport.watch_all(ready_timeout_s)
        return cls(transport, Appender(bootstrap_servers, requests_topic, upstream or UpstreamSecurity(), loop),
                   client_id)

    def call(self, key: str, body: Json, timeout_s: float) -> Awaitable[Json]:
        """The coordinator's answer to `body`, or COORDINATOR_NOT_AVAILABLE's. `body` is written (keyed by `key`)
        before this returns, so requests are written in the order of the calls."""
        request_id, future = self._transport.expect(key)
        written = self.appender.append(key, encode_request(body, request_id))
        return self._answer(request_id, asyncio.wrap_future(future), written, body, timeout_s)

    def call_written(self, key: str, body: Json, timeout_s: float,
                     write: Callable[[bytes], Awaitable[object]]) -> Awaitable[Json]:
        """`call`, with `body` written by `write` (its encoded value) instead of the appender: a TxnOffsetCommit,
        written inside the producer's transaction (`gateway.upstream.transactions`)."""
        request_id, future = self._transport.expect(key)
        written = asyncio.ensure_future(write(encode_request(body, request_id)))
        return self._answer(request_id, asyncio.wrap_future(future), written, body, timeout_s)

    async def _answer(self, request_id: str, answer: asyncio.Future, written: asyncio.Future, body: Json,
                      timeout_s: float) -> Json:
        try:
            # asyncio.wait, not wait_for: a timeout must not cancel the future the reader thread completes.
            await asyncio.wait({answer, written}, timeout=timeout_s, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            self._transport.forget(request_id)
        if answer.done():
            return answer.result()
        if written.done() and written.exception() is not None:
            return not_written(body, written.exception())
        return unanswered(body, Errors.COORDINATOR_NOT_AVAILABLE,
                          f"the coordinator did not answer within {timeout_s:.1f} s")

    async def append(self, key: str, body: Json) -> tuple[str, asyncio.Future]:
        """Append `body` (keyed by `key`) to the control topic; return its request id once the broker has
        acknowledged it, and the future of the coordinator's answer (`forget` the id when done with it). Raises
        what the append raised."""
        request_id, answer = self._transport.expect(key)
        try:
            await self.appender.append(key, encode_request(body, request_id))
        except BaseException:
            self._transport.forget(request_id)
            raise
        return request_id, asyncio.wrap_future(answer)

    def expect(self, key: str) -> tuple[str, Any]:
        """A request id and the (concurrent) future of the coordinator's answer to a request keyed by `key` that
        the caller writes itself; `forget` the id when done with it."""
        return self._transport.expect(key)

    def forget(self, request_id: str) -> None:
        self._transport.forget(request_id)

    def close(self) -> None:
        for stop in (self.appender.close, self._transport.close):
            try:
                stop()
            except Exception as exc:  # noqa: BLE001 - stopping with the cluster gone: unsent requests are dropped
                log.warning("closing the control-topic clients: %s", exc)


def not_written(body: Json, failure: BaseException) -> Json:
    """The answer to `body` when the control topic would not take it, with the error Kafka's coordinator gives
    for that failure of its log (`state.api.append_error`)."""
    log.warning("cannot send %s: %s", body.get("api"), failure)
    answer_code = getattr(failure, "answer_code", None)  # the upstream's refusal is the answer (a fenced producer)
    return unanswered(body, answer_code if answer_code is not None else
                      append_error(body.get("api", ""), getattr(failure, "code", None)),
                      f"the control topic cannot be written: {failure}")
