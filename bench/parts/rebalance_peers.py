"""The peers a group's rebalances are measured on (`bench.rebalance_bench`, and its step-by-step mode
`bench.parts.rebalance_steps`): ours, the coordinator query and a gateway on an embedded tansu broker; the same
query through a second gateway with other flags; tansu's own group coordinator. Each on a new topic of its own."""

from __future__ import annotations

import uuid
from pathlib import Path

from kafka.admin import KafkaAdminClient, NewTopic

from common import config as job_config
from common.topics import ensure_topics
from gateway.front.process import start_gateway
from streaming.kafka_io.embedded import start_broker
from streaming.query import start_query, stop_between_batches

PARTITIONS = 6


def create_topic(bootstrap: str, partitions: int = PARTITIONS) -> str:
    topic = f"rebalance-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    return topic


class Ours:
    """The coordinator query and a gateway, on their own broker."""

    def __init__(self, spark, workdir: Path, overrides: dict[str, str], gateway_args: list[str]) -> None:
        self.gateways = []
        self.broker = start_broker()
        self.props = job_config.load(overrides={"bootstrap.servers": self.broker.bootstrap_servers,
                                                "checkpoint.location": str(workdir / "checkpoint"), **overrides})
        ensure_topics({"bootstrap_servers": self.broker.bootstrap_servers}, self.props)
        self.query = start_query(spark, self.props, query_name="bench-rebalance")
        shared = {k: v for k, v in self.props.items() if k.startswith(("topic.", "group."))}
        self.shared, self.workdir = shared, workdir
        self.bootstrap = self.another_gateway(gateway_args)
        self.topic = create_topic(self.broker.bootstrap_servers)

    def another_gateway(self, args: list[str]) -> str:
        """A gateway (with `args`) in front of this query's broker; its bootstrap address."""
        gateway = start_gateway(self.broker.bootstrap_servers, self.shared, args=args,
                                log_path=self.workdir / f"gateway-{len(self.gateways)}.log")
        self.gateways.append(gateway)
        return gateway.bootstrap_servers

    def stop(self) -> None:
        stop_between_batches(self.query)
        for gateway in self.gateways:
            gateway.stop()
        self.broker.stop()


class OtherGateway:
    """The same query through a second gateway with other flags (an A/B of a gateway option in the same run)."""

    def __init__(self, ours: Ours, args: list[str]) -> None:
        self.bootstrap = ours.another_gateway(args)
        self.topic = ours.topic

    def stop(self) -> None:
        pass


class Tansu:
    def __init__(self) -> None:
        self.broker = start_broker()
        self.bootstrap = self.broker.bootstrap_servers
        self.topic = create_topic(self.bootstrap)

    def stop(self) -> None:
        self.broker.stop()
