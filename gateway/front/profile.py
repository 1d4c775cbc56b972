"""The gateway's requests per kind (`coordinator gateway --profile-interval-s N`): what each client sends and where
it was answered, logged every N seconds.

One line per (API, version, route) seen in the interval: how many, their mean size, and the time from the request's
frame read to its answer ready (p50, p99, max). The route says who answered:
- `gateway`: the gateway itself (ApiVersions, SASL, FindCoordinator for groups, the ACL APIs without authorization);
- `view`: a group request answered from the group's view (`gateway.fast.fast_path`), or a member-id round;
- `coordinator`: a group request that waited for the query's micro-batch;
- `upstream`: forwarded to the broker.
A client slower through the gateway than another shows here which of its requests wait for the coordinator, and how
many it sends per record (docs/gateway.md, "Every client's speed").
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable

from kafka.protocol.api_key import ApiKey

log = logging.getLogger(__name__)


@dataclass
class Route:
    """Who answers one request; a group request's task names it once it knows."""

    name: str


ROUTE: contextvars.ContextVar[Route | None] = contextvars.ContextVar("gateway_request_route", default=None)
"""The route of the request being handled: set by the connection before its handling starts, so the tasks it spawns
(which copy the context) write to the same `Route`."""


def routed(name: str) -> None:
    """The request being handled is answered by `name` (a no-op while the profile is off)."""
    route = ROUTE.get()
    if route is not None:
        route.name = name


@dataclass
class _Kind:
    sizes: int = 0
    seconds: list[float] = field(default_factory=list)


class RequestProfile:
    """Requests per (API key, version, route) since the last report."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._kinds: dict[tuple[int, int, str], _Kind] = {}
        self._since = time.monotonic()

    def timed(self, slot: Awaitable[Any], api_key: int, version: int, size: int, route: Route,
              started: float) -> Awaitable[Any]:
        """`slot`, recording its kind and time once it is ready."""
        async def wait() -> Any:
            try:
                return await slot
            finally:
                self.record(api_key, version, route.name, size, time.perf_counter() - started)
        return asyncio.get_running_loop().create_task(wait())

    def record(self, api_key: int, version: int, route: str, size: int, seconds: float) -> None:
        kind = self._kinds.setdefault((api_key, version, route), _Kind())
        kind.sizes += size
        kind.seconds.append(seconds)

    def report(self) -> list[str]:
        """The interval's lines, busiest first; the counts start again."""
        now = time.monotonic()
        span, self._since = now - self._since, now
        kinds, self._kinds = self._kinds, {}
        lines = []
        for (api_key, version, route), kind in sorted(kinds.items(), key=lambda item: -len(item[1].seconds)):
            times = sorted(kind.seconds)
            n = len(times)
            lines.append(f"{_name(api_key)} v{version} {route}: {n} ({n / span:.1f}/s), {kind.sizes // n} B, "
                         f"p50 {times[n // 2] * 1000:.2f} ms, p99 {times[min(n - 1, n * 99 // 100)] * 1000:.2f} ms, "
                         f"max {times[-1] * 1000:.2f} ms")
        return lines

    async def run(self) -> None:
        """Log a report every interval (nothing for an idle one) until cancelled."""
        while True:
            await asyncio.sleep(self.interval_s)
            lines = self.report()
            if lines:
                log.info("requests in the last %.0f s:\n  %s", self.interval_s, "\n  ".join(lines))


def _name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API {api_key}"
