"""Creating the coordinator's topics when missing, and checking that they are usable before the query starts (or
the gateway serves)."""

from __future__ import annotations

import logging
import time
from typing import Mapping

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

from common.config import Topics

log = logging.getLogger(__name__)

LEASE_TOPIC_CONFIGS = {"cleanup.policy": "compact"}
"""The drivers' lease topic (`streaming.recovery.lease`) needs only the latest record per checkpoint. One partition,
so every driver reads one order."""


def ensure_topics(client: Mapping[str, object], props: Mapping[str, str], timeout_s: float = 30.0,
                  check_compaction: bool = True) -> None:
    """Create missing topics (records topic with `topic.records.cleanup.policy`; the drivers' lease topic with one
    partition, compacted), then wait until every topic has all its partitions with a leader. Raises if a topic stays
    unusable. `check_compaction`: warn if the records topic does not report compaction (not for the embedded
    broker, which never does and whose topics last one run)."""
    topics = Topics.from_properties(props)
    wanted = {**topics.partitions(props), props["topic.lease"]: 1}
    replication = int(props["topic.replication.factor"])
    admin = KafkaAdminClient(**client)
    try:
        existing = set(admin.list_topics())
        if props["topic.create"].lower() == "true":
            for name, partitions in wanted.items():
                if name in existing:
                    continue
                configs = {}
                if name == topics.records:
                    configs["cleanup.policy"] = props["topic.records.cleanup.policy"]
                elif name in (topics.timers, topics.views):
                    configs["cleanup.policy"] = "compact"
                elif name == props["topic.lease"]:
                    configs.update(LEASE_TOPIC_CONFIGS)
                try:
                    admin.create_topics([NewTopic(name, partitions, replication, topic_configs=configs)])
                    log.info("created topic %s (%d partitions, %s)", name, partitions, configs or "defaults")
                except TopicAlreadyExistsError:
                    pass
        _wait_usable(admin, list(wanted), timeout_s)
        if check_compaction:
            _warn_if_not_compacted(admin, topics.records)
    finally:
        admin.close()


def create_generation(client: Mapping[str, object], name: str, partitions: int, replication: int,
                      timeout_s: float = 30.0) -> None:
    """Create a generation of the requests topic (`common.generations`) unless it exists, and wait until it is
    usable: writers are told of it only after this returns."""
    admin = KafkaAdminClient(**client)
    try:
        try:
            admin.create_topics([NewTopic(name, partitions, replication)])
            log.info("created topic %s (%d partitions)", name, partitions)
        except TopicAlreadyExistsError:
            pass
        _wait_usable(admin, [name], timeout_s)
    finally:
        admin.close()


def delete_generation(client: Mapping[str, object], name: str) -> bool:
    """Delete a retired generation of the requests topic (`common.generations`): on tansu a topic's records and its
    share of the broker's metadata go only with the topic. False (and a line) when the broker refused or could not
    be reached: the caller tries again later."""
    admin = KafkaAdminClient(**client)
    try:
        admin.delete_topics([name])
    except UnknownTopicOrPartitionError:
        pass
    except Exception as exc:  # noqa: BLE001 - a topic left behind costs the broker; the query goes on
        log.warning("cannot delete the retired topic %s: %s", name, exc)
        return False
    finally:
        admin.close()
    log.info("deleted the retired topic %s", name)
    return True


def _wait_usable(admin, names: list[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        problems = []
        described = {t["name"]: t for t in admin.describe_topics(names)}
        for name in names:
            topic = described.get(name)
            if topic is None or topic.get("error_code", 0) != 0 or not topic.get("partitions"):
                problems.append(f"{name}: missing")
            elif any(p.get("leader_id", -1) < 0 for p in topic["partitions"]):
                problems.append(f"{name}: partitions without a leader")
        if not problems:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("topics not usable: " + "; ".join(problems))
        time.sleep(0.2)


def _warn_if_not_compacted(admin, name: str) -> None:
    """The records topic must be compacted in production; tansu accepts the setting but neither reports nor
    honours it, so this only warns."""
    try:
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"].get(name, {})
    except Exception as exc:  # a broker may not allow DescribeConfigs; the topic still works
        log.warning("could not check cleanup.policy of %s: %s", name, exc)
        return
    if "compact" not in str(configs):
        log.warning("records topic %s does not report cleanup.policy=compact", name)
