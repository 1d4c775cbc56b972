"""The heartbeat interval the coordinator tells consumer-protocol members: Kafka's, lengthened when batches run long.

Kafka tells every member `group.consumer.heartbeat.interval.ms`. librdkafka gives a ConsumerGroupHeartbeat that
interval to be answered before it times the request out, and here a heartbeat that changes something waits for a
micro-batch: when batches run longer than the interval, its answer comes too late and is lost. So the coordinator
tells a longer interval when a heartbeat waited long for its batch (back-pressure through the protocol itself,
issue 26 item 5; docs/wire-format.md, "The heartbeat interval"):

    told = min(max(configured, ceil(4 x wait / 1 s) s), max(configured, min(max interval, session timeout / 3)))

`wait` is the time from the request's arrival (its control-topic record's timestamp) to the batch that handles it
(the call's time): it comes from the inputs, so a replay tells the same. Four waits cover the wait of the next
heartbeat and its batch's own run with room for a slower one; whole seconds keep the interval from moving with
every batch. The cap is Kafka's `group.consumer.max.heartbeat.interval.ms`, and a third of the session timeout so
that a member still heartbeats at least three times per session; it never goes below the configured interval.
It learns only from heartbeats that waited: when batches turn slow at once (a large group's rebalance), the answer
that would tell the longer interval is itself the late one, which is why the configured interval stays Kafka's 5 s
(docs/operations-streaming.md, "Issue 26's levers, measured").
"""

from __future__ import annotations

from state.config import CoordinatorConfig

WAITS_PER_INTERVAL = 4
"""How many of the last wait the interval told leaves room for."""


def heartbeat_interval_ms(config: CoordinatorConfig, waited_ms: int) -> int:
    """The interval to tell a member whose heartbeat waited `waited_ms` for its batch."""
    configured = config.group_consumer_heartbeat_interval_ms
    lengthened = -(-WAITS_PER_INTERVAL * max(waited_ms, 0) // 1000) * 1000
    limit = max(configured, min(config.group_consumer_max_heartbeat_interval_ms,
                                config.group_consumer_session_timeout_ms // 3))
    return min(max(configured, lengthened), limit)
