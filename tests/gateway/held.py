"""A gateway in this process whose view follower only moves when the test steps it: a view held back on purpose.

Everything is the product's (`gateway.front.server.Gateway`, `gateway.fast.fast_path.FastPath`,
`gateway.fast.views.ViewFollower`, `gateway.upstream.coordinator.CoordinatorClient`), run on an event loop in a thread;
the follower's thread is simply not started, and `catch_up` runs its rounds (`ViewFollower.step`) until a condition
holds. The bound is long, so that a view the test no longer steps stays the one the gateway answers from.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable

from gateway.upstream.coordinator import CoordinatorClient
from gateway.fast.fast_path import FastPath, Heartbeats
from gateway.front.server import Gateway, GatewaySettings
from gateway.fast.views import ViewFollower


class HeldGateway:
    def __init__(self, broker: str, topics: dict[str, str], bound_ms: int = 120_000) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="held-gateway", daemon=True)
        self._thread.start()
        settings = GatewaySettings(
            bootstrap_servers=broker, listen_host="127.0.0.1", listen_port=0, advertised_host="127.0.0.1",
            requests_topic=topics["topic.requests"], responses_topic=topics["topic.responses"],
            views_topic=topics["topic.views"], view_bound_ms=bound_ms, response_fetch_wait_ms=10,
            member_id_round_by_coordinator=True)
        self.coordinator = CoordinatorClient.connect(broker, settings.requests_topic, settings.responses_topic, {},
                                                     self.loop, settings.response_fetch_wait_ms)
        self.follower = ViewFollower(broker, settings.views_topic, settings.requests_topic, {}, bound_ms)
        heartbeats = Heartbeats(self.coordinator.appender, settings.liveness_interval_ms, self.loop)
        self.gateway = Gateway(settings, self.coordinator, fast_path=FastPath(
            self.follower, self.coordinator.appender, heartbeats, 4096))
        asyncio.run_coroutine_threadsafe(self.gateway.start(), self.loop).result(60)

    @property
    def bootstrap(self) -> str:
        return self.gateway.bootstrap_address

    def catch_up(self, until: Callable[[], bool], timeout_s: float = 60.0) -> None:
        """Step the follower until `until()` (an upper bound, not a timing expectation)."""
        deadline = time.monotonic() + timeout_s
        while not until():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the held follower did not get there within {timeout_s} s")
            self.follower.step()
            time.sleep(0.05)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.gateway.close(), self.loop).result(30)
        self.coordinator.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
