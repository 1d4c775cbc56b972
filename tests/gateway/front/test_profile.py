"""The gateway's profile of requests per kind (`coordinator gateway --profile-interval-s`): what it reports."""

from __future__ import annotations

import asyncio

from kafka.protocol.api_key import ApiKey

from gateway.front.profile import ROUTE, RequestProfile, Route, routed


def test_a_report_has_a_line_per_api_version_and_route_busiest_first_and_starts_again():
    profile = RequestProfile(1.0)
    for ms in (1, 2, 3):
        profile.record(ApiKey.OffsetCommit, 9, "view", 120, ms / 1000)
    profile.record(ApiKey.OffsetCommit, 9, "coordinator", 130, 0.5)
    profile.record(ApiKey.ConsumerGroupHeartbeat, 1, "coordinator", 90, 0.6)
    lines = profile.report()
    assert lines[0].startswith("OffsetCommit v9 view: 3 (") and "120 B, p50 2.00 ms" in lines[0]
    assert lines[0].endswith("max 3.00 ms")
    assert sorted(line.split(":")[0] for line in lines[1:]) == ["ConsumerGroupHeartbeat v1 coordinator",
                                                                "OffsetCommit v9 coordinator"]
    assert profile.report() == []


def test_a_request_s_route_is_named_by_the_task_that_answers_it():
    """The connection sets the route before handling a request; the tasks its handling spawns copy the context and
    name who answered. Without a profile, naming a route does nothing."""
    async def answered_from_the_view() -> None:
        await asyncio.sleep(0)
        routed("view")

    async def scenario() -> str:
        route = Route("coordinator")
        token = ROUTE.set(route)
        try:
            task = asyncio.get_running_loop().create_task(answered_from_the_view())
        finally:
            ROUTE.reset(token)
        await task
        routed("gateway")  # after its handling began: no request being profiled here
        return route.name

    assert asyncio.run(scenario()) == "view"
