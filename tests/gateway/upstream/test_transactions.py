"""The gateway's transactional writes to the control topic (`gateway.upstream.transactions`) against a real broker:
a gateway started again after a kill goes on from the sequence number the log holds for the producer's epoch; the
AddPartitionsToTxn, the write and the abort at the timeout go to the brokers the upstream names
(`gateway.upstream.routes`)."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from kafka.protocol.producer.transaction import EndTxnRequest, EndTxnResponse

from gateway.upstream.broker import Upstream, UpstreamSecurity
from gateway.upstream.routes import NodeConnections, Routes
from gateway.upstream.transactions import ControlPartitions, TimedOut
from state.api import Errors, OpenTransaction
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
        routes, connections = _routes(host, int(port))
        try:
            init = await upstream.request(InitProducerIdRequest[4](
                transactional_id=f"tx-{topic}", transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1),
                4, InitProducerIdResponse)
            doc = {"transactional_id": f"tx-{topic}", "producer_id": init.producer_id,
                   "producer_epoch": init.producer_epoch, "group_id": "g"}
            offsets = []
            for gateway in (ControlPartitions(topic, routes), ControlPartitions(topic, routes)):  # the second: again
                for n in range(7 if not offsets else 2):
                    assert await gateway.add(connections, doc, 10) == 0
                    written = await gateway.write(connections, doc, b"g", json.dumps({"n": n}).encode(), 10)
                    offsets.append(written.offset)
            return offsets
        finally:
            upstream.close()
            connections.close()
            routes.close()

    assert asyncio.run(scenario()) == list(range(9))


def _routes(host: str, port: int) -> tuple[Routes, NodeConnections]:
    """A gateway's routes and a connection's own connections, with `Gateway.upstream_addresses`' rule: a node at
    the address the upstream named for it, any broker at the bootstrap address."""
    brokers: dict[int, tuple[str, int]] = {}

    def addresses(node_id: int | None) -> list[tuple[str, int]]:
        if node_id is not None:
            return [brokers[node_id]] if node_id in brokers else []
        return [(host, port)]

    def learn(named) -> None:
        for node_id, h, p in named:
            brokers[node_id] = (h, p)

    return Routes(NodeConnections(addresses, UpstreamSecurity(), 10), learn), NodeConnections(
        addresses, UpstreamSecurity(), 10)


def test_transaction_calls_go_to_the_coordinator_and_the_leader_the_upstream_names(caplog):
    """tansu listening on 127.0.0.1 and naming itself `localhost` (its advertised listener): the gateway's
    AddPartitionsToTxn goes to the transaction coordinator FindCoordinator (key type 1) named, its write to the
    leader Metadata named, both at `localhost`, not at the bootstrap address they were looked up from; and the abort
    at the timeout (InitProducerId) reaches the coordinator too: the client's producer is fenced after it. On a
    cluster of several brokers the bootstrap broker answers NOT_COORDINATOR for most transactional ids."""
    from streaming.kafka_io.embedded import start_broker

    caplog.set_level(logging.INFO, logger="gateway.upstream.routes")
    embedded = start_broker(advertised_host="localhost")
    try:
        port = embedded.port
        topic = create_topic(f"127.0.0.1:{port}", 4, prefix="requests")

        async def scenario() -> tuple[list[str], int, int, int, int | str]:
            client = await Upstream.connect("127.0.0.1", port, UpstreamSecurity(), 10)  # the application's
            routes, connections = _routes("127.0.0.1", port)
            fencer = NodeConnections(connections._addresses, UpstreamSecurity(), 10)
            try:
                txn_id = f"tx-{topic}"
                init = await client.request(InitProducerIdRequest[4](
                    transactional_id=txn_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1),
                    4, InitProducerIdResponse)
                doc = {"transactional_id": txn_id, "producer_id": init.producer_id,
                       "producer_epoch": init.producer_epoch, "group_id": "g"}
                partitions = ControlPartitions(topic, routes)
                added = await partitions.add(connections, doc, 10)
                written = await partitions.write(connections, doc, b"g", b'{"n": 0}', 10)
                coordinator = await routes.transaction_coordinator(txn_id)
                leader = await routes.leader(topic, written.partition)
                used = [(await connections.connection(coordinator)).address,
                        (await connections.connection(leader)).address]
                lookups = routes.lookups
                fenced = await TimedOut(lambda: [], routes, fencer).fence(OpenTransaction(
                    transactional_id=txn_id, producer_id=init.producer_id, producer_epoch=init.producer_epoch,
                    deadline_ms=0))
                try:
                    end = (await client.request(EndTxnRequest[3](
                        transactional_id=txn_id, producer_id=init.producer_id, producer_epoch=init.producer_epoch,
                        committed=True), 3, EndTxnResponse)).error_code
                except ConnectionError:  # tansu closes the fenced producer's connection
                    end = "closed"
                return used, added, lookups, fenced, end
            finally:
                client.close()
                connections.close()
                fencer.close()
                routes.close()

        used, added, lookups, fenced, end = asyncio.run(scenario())
    finally:
        embedded.stop()
    assert added == 0
    assert used == [f"localhost:{port}", f"localhost:{port}"]
    assert lookups == 2  # one FindCoordinator, one Metadata: remembered after that
    named = [r.getMessage() for r in caplog.records if "transaction coordinator of" in r.getMessage()]
    assert named == [f"transaction coordinator of 'tx-{topic}': node 111 (localhost:{port})"]
    assert fenced == 0
    assert end in (Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH, "closed")  # its commit did not go through
