"""A gateway driven in memory: no listener, no broker, no query, so its decisions are tested in the fast lane.

The gateway is the product's (`gateway.front.server.Gateway`, its connections, its SASL, authorization and fast
path), on an event loop in a thread. A client connection is a pair of connected streams (`socket.socketpair`: no
port, no listener): the gateway serves one end (`Gateway.serve`), the test speaks Kafka's protocol on the other
with the same raw connection as against a listener (`tests.gateway.raw.Connection`). What the gateway learns of
the cluster at start it is told instead (`Gateway.know_upstream`: the embedded tansu's API versions, one broker
nobody listens for). The control topic is a list (`MemoryControlTopic`, the transport and the appender of the
product's `CoordinatorClient`): what the gateway writes there is read back decoded, and the coordinator's answers
are the ones the test gives; a request nobody answers gets the gateway's own COORDINATOR_NOT_AVAILABLE after its
timeout, as when the query is away.

What needs a real broker (anything forwarded upstream), a real query or a real client stays in the tests that start
them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import socket
import threading
import time
from dataclasses import replace
from typing import Any, Callable

from gateway.protocol.frames import STREAM_BUFFER_BYTES
from gateway.front.server import Gateway, GatewaySettings
from gateway.upstream.coordinator import CoordinatorClient
from tests.gateway.raw import Connection

TANSU_VERSIONS = {
    0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2),
    22: (0, 5), 24: (0, 5), 25: (0, 4), 26: (0, 4), 28: (0, 4), 29: (0, 3), 30: (0, 3), 32: (0, 4), 36: (0, 2),
    42: (0, 2), 44: (0, 1), 46: (0, 0), 50: (0, 0), 51: (0, 0), 60: (0, 1), 69: (0, 0), 71: (0, 0), 75: (0, 0)}
"""The API versions the embedded broker (tansu 0.6, `streaming.kafka_io.embedded`) answers ApiVersions with."""
TANSU_FEATURES = {"throttle_time_ms": 0, "supported_features": [], "finalized_features_epoch": -1,
                  "finalized_features": [], "zk_migration_ready": False}
BROKER = (111, "127.0.0.1", 1)
"""The one upstream broker the gateway is told of; nothing listens there (forwarding is not tested in memory)."""

SETTINGS = GatewaySettings(bootstrap_servers=f"{BROKER[1]}:{BROKER[2]}", listen_host="127.0.0.1", listen_port=0,
                           advertised_host="127.0.0.1", requests_topic="requests", responses_topic="responses")


class MemoryControlTopic:
    """The control topic as the gateway's `CoordinatorClient` uses it: the appender's `append` (acknowledged at
    once) and the answer reader's `expect`/`forget` (as `client.transport.KafkaTransport`). `requests` holds what
    was appended, decoded; `answer` is the coordinator's side."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._ids = itertools.count()
        self._expected: dict[str, concurrent.futures.Future] = {}
        self.requests: list[dict] = []

    def append(self, key: str, value: bytes) -> asyncio.Future:
        done = self._loop.create_future()
        self.requests.append({**json.loads(value), "key": key})
        done.set_result(None)
        return done

    def expect(self, key: str) -> tuple[str, concurrent.futures.Future]:
        request_id = f"memory-{next(self._ids)}"
        self._expected[request_id] = concurrent.futures.Future()
        return request_id, self._expected[request_id]

    def forget(self, request_id: str) -> None:
        self._expected.pop(request_id, None)

    def answer(self, request_id: str, answer: dict) -> None:
        """The coordinator's answer to a request the gateway is waiting for."""
        self._expected[request_id].set_result(answer)

    def wait_for(self, found: Callable[[dict], bool], timeout_s: float = 10.0) -> dict:
        """The first request appended that `found` accepts, once it is there (an upper bound, not a timing
        expectation)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for request in list(self.requests):
                if found(request):
                    return request
            time.sleep(0.01)
        raise TimeoutError(f"no such request within {timeout_s} s: {self.requests}")

    def close(self, timeout_s: float = 0.0) -> None:
        pass


class MemoryGateway:
    """A gateway in this process, served over in-memory connections. `settings` are overrides of `SETTINGS`."""

    def __init__(self, fast_path: Any = None, security: Any = None, **settings: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="memory-gateway", daemon=True)
        self._thread.start()
        self.control = MemoryControlTopic(self.loop)
        self.coordinator = CoordinatorClient(self.control, self.control, "memory-gateway")
        self.gateway = Gateway(replace(SETTINGS, **settings), self.coordinator, security, fast_path)
        self.gateway.know_upstream(TANSU_VERSIONS, dict(TANSU_FEATURES), [BROKER])
        self.connections: list[concurrent.futures.Future] = []

    def connect(self) -> Connection:
        """A client connection the gateway serves until either side closes it."""
        ours, theirs = socket.socketpair()
        ours.settimeout(30)

        async def serve() -> None:
            reader, writer = await asyncio.open_connection(sock=theirs, limit=STREAM_BUFFER_BYTES)
            await self.gateway.serve(None, reader, writer)

        self.connections.append(asyncio.run_coroutine_threadsafe(serve(), self.loop))
        return Connection(sock=ours)

    @property
    def serving(self) -> bool:
        """The gateway's event loop runs, and no connection it served ended in an error."""
        ended = [c for c in self.connections if c.done()]
        return self._thread.is_alive() and all(c.exception() is None for c in ended)

    def close(self) -> None:
        """Close the gateway and every connection it still serves, then stop its loop."""
        async def close() -> None:
            await self.gateway.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()
