"""The coordinator as the gateway sees it: control requests out, their answers awaited on the event loop.

Built on the client library's Kafka transport (answers matched by `request_id`, read from the response partitions
of the keys asked about), with every response partition watched from the start, so sending never waits for the
reader. A request the coordinator does not answer within its budget is answered by the gateway with
COORDINATOR_NOT_AVAILABLE, as Kafka's coordinator answers a write that timed out: clients then look the coordinator
up again and retry, which is what they do when a broker's coordinator moves. A late answer is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from client.transport import KafkaTransport
from gateway.control import Json, unanswered
from state.api import Errors

log = logging.getLogger(__name__)


class CoordinatorClient:
    def __init__(self, bootstrap_servers: str, requests_topic: str, responses_topic: str,
                 kafka_config: dict[str, Any], fetch_max_wait_ms: int = 50, ready_timeout_s: float = 60.0) -> None:
        """Blocks until the response topic is being read (call it before the event loop serves clients)."""
        self.client_id = f"groupcoord-gateway-{uuid.uuid4().hex[:8]}"
        self._transport = KafkaTransport(bootstrap_servers, requests_topic, responses_topic,
                                         client_id=self.client_id, fetch_max_wait_ms=fetch_max_wait_ms,
                                         **kafka_config)
        self._transport.watch_all(ready_timeout_s)

    async def call(self, key: str, body: Json, timeout_s: float) -> Json:
        """The coordinator's answer to `body` (sent keyed by `key`), or COORDINATOR_NOT_AVAILABLE's."""
        try:
            request_id, future = self._transport.submit(key, body)
        except Exception as exc:  # noqa: BLE001 - the control topic cannot be written: the coordinator is away
            log.warning("cannot send %s: %s", body.get("api"), exc)
            return unanswered(body, Errors.COORDINATOR_NOT_AVAILABLE, f"the control topic cannot be written: {exc}")
        answer = asyncio.wrap_future(future)
        try:
            # asyncio.wait, not wait_for: a timeout must not cancel the future the reader thread completes.
            await asyncio.wait({answer}, timeout=timeout_s)
        finally:
            self._transport.forget(request_id)
        if answer.done():
            return answer.result()
        return unanswered(body, Errors.COORDINATOR_NOT_AVAILABLE,
                          f"the coordinator did not answer within {timeout_s:.1f} s")

    async def append(self, key: str, body: Json) -> tuple[str, asyncio.Future]:
        """Append `body` (keyed by `key`) to the control topic; return its request id once the broker has
        acknowledged it, and the future of the coordinator's answer (`forget` the id when done with it). Raises
        what the append raised."""
        request_id, answer, appended = self._transport.append(key, body)
        try:
            await asyncio.wrap_future(appended)
        except BaseException:
            self._transport.forget(request_id)
            raise
        return request_id, asyncio.wrap_future(answer)

    def forget(self, request_id: str) -> None:
        self._transport.forget(request_id)

    def close(self) -> None:
        try:
            self._transport.close()
        except Exception as exc:  # noqa: BLE001 - stopping with the cluster gone: unsent requests are dropped
            log.warning("closing the control-topic clients: %s", exc)
