"""The gateway's transactional writes to the control topic (`gateway.upstream.transactions`) against a real broker:
a gateway started again after a kill goes on from the sequence number the log holds for the producer's epoch."""

from __future__ import annotations

import asyncio
import json

import pytest
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from gateway.upstream.broker import Upstream, UpstreamSecurity
from gateway.upstream.transactions import ControlPartitions
from tests.support.kafka import create_topic

pytestmark = [pytest.mark.broker]


def test_a_gateway_started_again_writes_on_from_the_producers_last_sequence(broker):
    """The first gateway wrote seven TxnOffsetCommits of one producer epoch (sequences 0-6); a new one (its
    numbering lost with the process) is answered DUPLICATE_SEQUENCE_NUMBER at 0 by tansu, reads the last sequence
    back from the log and writes at 7, and on from there (before, every transaction of that epoch was refused: the
    application could not commit again until it started over)."""
    topic = create_topic(broker, 4, prefix="requests")

    async def scenario() -> list[int]:
        host, port = broker.split(",")[0].rsplit(":", 1)
        upstream = await Upstream.connect(host, int(port), UpstreamSecurity(), 10)
        try:
            init = await upstream.request(InitProducerIdRequest[4](
                transactional_id=f"tx-{topic}", transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1),
                4, InitProducerIdResponse)
            doc = {"transactional_id": f"tx-{topic}", "producer_id": init.producer_id,
                   "producer_epoch": init.producer_epoch, "group_id": "g"}
            offsets = []
            for gateway in (ControlPartitions(topic), ControlPartitions(topic)):  # the second: started again
                for n in range(7 if not offsets else 2):
                    assert await gateway.add(upstream, "g", doc) == 0
                    written = await gateway.write(upstream, doc, b"g", json.dumps({"n": n}).encode())
                    offsets.append(written.offset)
            return offsets
        finally:
            upstream.close()

    assert asyncio.run(scenario()) == list(range(9))
