"""The ACLs and SCRAM credentials, kept in two compacted topics of the cluster and followed by every gateway.

Kafka keeps both in its metadata log and every broker follows it; here the log is a pair of one-partition compacted
topics (`topic.acls`, `topic.scram.credentials`), so several gateways share one set without talking to each other:
- a record's key names one ACL binding or one (user, mechanism); its value is the binding or the credential (salt,
  iterations, StoredKey, ServerKey: never a password), and a tombstone deletes it, which compaction keeps small;
- each gateway reads both topics from the beginning before it serves (`start`), then follows them with one consumer
  whose fetches wait at most `follow_wait_ms`: a change takes effect on every gateway within that wait plus one
  fetch round trip (`docs/gateway.md`, "Security");
- a write (CreateAcls, DeleteAcls, AlterUserScramCredentials) is acknowledged by the cluster (acks=all) and then
  waited for until this gateway's own follower has applied it, so the answer a client gets is already in force
  here, in the order of the topic.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable, Iterable, Mapping

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from gateway.security.acl import AclBinding, Authorizer
from gateway.security.scram import ScramCredential

log = logging.getLogger(__name__)

FOLLOW_WAIT_MS = 250
"""How long the follower's fetch may wait for new records (tansu holds a fetch this long even when data arrives)."""
TOPIC_CONFIGS = {"cleanup.policy": "compact"}


def _key(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")


def acl_record(binding: AclBinding, present: bool) -> tuple[bytes, bytes | None]:
    doc = binding.to_json()
    return _key(doc), (_key(doc) if present else None)


def credential_record(user: str, mechanism: str, credential: ScramCredential | None) -> tuple[bytes, bytes | None]:
    return _key({"user": user, "mechanism": mechanism}), (_key(credential.to_json()) if credential else None)


class SecurityTopics:
    """The gateway's view of both topics: `authorizer` (a snapshot replaced on every change) and `credential`."""

    def __init__(self, bootstrap_servers: str, kafka_config: Mapping[str, Any], acls_topic: str,
                 credentials_topic: str, authorizer: Authorizer, replication_factor: int = 1,
                 follow_wait_ms: int = FOLLOW_WAIT_MS) -> None:
        self._client = {"bootstrap_servers": bootstrap_servers, **kafka_config}
        self.acls_topic, self.credentials_topic = acls_topic, credentials_topic
        self.authorizer = authorizer
        self._replication = replication_factor
        self._wait_ms = follow_wait_ms
        self._bindings: set[AclBinding] = set()
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        self._applied: dict[str, int] = {acls_topic: 0, credentials_topic: 0}
        """Per topic: the offset after the last record applied."""
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._consumer: KafkaConsumer | None = None
        self._producer: KafkaProducer | None = None
        self._thread: threading.Thread | None = None
        self.listeners: list[Callable[[], None]] = []
        """Called (on the follower's thread) after each change of the ACLs."""

    # -- life cycle ----------------------------------------------------------------------------------------------

    def start(self, create: bool = True, timeout_s: float = 60.0) -> None:
        """Create the topics if missing, read both to their end, then follow them. Blocks (call it before the
        gateway listens): a gateway never serves with a partial set of ACLs or credentials."""
        if create:
            self._create_topics()
        consumer = KafkaConsumer(**self._client, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", fetch_max_wait_ms=self._wait_ms,
                                 client_id="groupcoord-gateway-security")
        partitions = [TopicPartition(topic, 0) for topic in self._applied]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            if time.monotonic() > deadline:
                consumer.close()
                raise TimeoutError(f"could not read {self.acls_topic} and {self.credentials_topic} to their end "
                                   f"within {timeout_s} s")
            self._apply(consumer.poll(timeout_ms=500))
        self._consumer = consumer
        self._producer = KafkaProducer(**self._client, acks="all", linger_ms=0,
                                       client_id="groupcoord-gateway-security")
        self._thread = threading.Thread(target=self._follow, name="security-topics", daemon=True)
        self._thread.start()
        log.info("security topics read: %d ACL bindings, %d SCRAM credentials", len(self._bindings),
                 len(self._credentials))

    def _create_topics(self) -> None:
        admin = KafkaAdminClient(**self._client, client_id="groupcoord-gateway-security")
        try:
            existing = set(admin.list_topics())
            for name in self._applied:
                if name in existing:
                    continue
                try:
                    admin.create_topics([NewTopic(name, 1, self._replication, topic_configs=TOPIC_CONFIGS)])
                    log.info("created topic %s (1 partition, compacted)", name)
                except TopicAlreadyExistsError:
                    pass
        finally:
            admin.close()
        # A topic just created may not have a leader yet: the consumer's end_offsets waits for one.

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._producer is not None:
            self._producer.close(timeout=5)
        if self._consumer is not None:
            self._consumer.close()

    # -- reading -------------------------------------------------------------------------------------------------

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                self._apply(self._consumer.poll(timeout_ms=self._wait_ms * 2))
            except Exception:  # noqa: BLE001 - the cluster is away: keep the last set and retry
                log.warning("following the security topics", exc_info=True)
                self._stop.wait(1.0)

    def _apply(self, batches: Mapping[TopicPartition, list]) -> None:
        if not batches:
            return
        acls_changed = False
        with self._changed:
            for tp, records in batches.items():
                for record in records:
                    if tp.topic == self.acls_topic:
                        binding = AclBinding.from_json(json.loads(record.key))
                        (self._bindings.add if record.value is not None else self._bindings.discard)(binding)
                        acls_changed = True
                    else:
                        key = json.loads(record.key)
                        if record.value is None:
                            self._credentials.pop((key["user"], key["mechanism"]), None)
                        else:
                            self._credentials[(key["user"], key["mechanism"])] = \
                                ScramCredential.from_json(json.loads(record.value))
                    self._applied[tp.topic] = record.offset + 1
            if acls_changed:
                self.authorizer = self.authorizer.with_bindings(self._bindings)
            self._changed.notify_all()
        if acls_changed:
            for listener in self.listeners:
                listener()

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get((user, mechanism))

    def credentials(self) -> dict[tuple[str, str], ScramCredential]:
        with self._changed:
            return dict(self._credentials)

    # -- writing -------------------------------------------------------------------------------------------------

    def write(self, topic: str, records: Iterable[tuple[bytes, bytes | None]], timeout_s: float = 30.0) -> None:
        """Write records (key, value or None) and return once this gateway has applied them. Blocking: call it
        in an executor."""
        last = -1
        futures = [self._producer.send(topic, key=key, value=value) for key, value in records]
        self._producer.flush(timeout=timeout_s)
        for future in futures:
            last = max(last, future.get(timeout=timeout_s).offset)
        if last < 0:
            return
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._applied[topic] <= last:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{topic} offset {last} not read back within {timeout_s} s")
                self._changed.wait(remaining)
