"""Exactly-once consume-process-produce through the gateway in front of the real query, with an unmodified
confluent-kafka application: its input offsets commit with its transaction (TxnOffsetCommit), stay pending while it
is open (a require_stable OffsetFetch answers UNSTABLE_OFFSET_COMMIT), and are never committed by an abort."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata
from kafka import TopicPartition as KafkaPythonPartition
from kafka import errors as kafka_errors
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse
from kafka.protocol.producer.transaction import (EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
                                                 InitProducerIdResponse, TxnOffsetCommitRequest,
                                                 TxnOffsetCommitResponse)

from common.markers import read_markers
from deploy.drills.transactions import sink_outcomes
from gateway.front.process import start_gateway
from state.api import Errors
from tests.gateway.conftest import GATEWAY_PROPERTIES, GatewayEnv, wait_for
from tests.support.coordinator import new_run
from tests.gateway.raw import Connection

pytestmark = [pytest.mark.spark, pytest.mark.broker]

TRANSACTIONAL_ID_NOT_FOUND = 105
REFUSED = {KafkaError.INVALID_PRODUCER_ID_MAPPING, KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.PRODUCER_FENCED,
           KafkaError.INVALID_TXN_STATE, KafkaError.INVALID_REQUEST, KafkaError.UNKNOWN_PRODUCER_ID,
           TRANSACTIONAL_ID_NOT_FOUND}
"""What a transaction coordinator answers for a transaction it does not know (tansu: 105 for an empty
transactional id, 49 for a producer id it never issued)."""


def stable_fetch(bootstrap: str, group: str, topic: str) -> tuple[int, int]:
    """(offset, error) of partition 0 as a require_stable OffsetFetch (v7) through the gateway answers."""
    connection = Connection(bootstrap)
    try:
        answer = connection.call(OffsetFetchRequest[7](group_id=group, require_stable=True, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]), 7, OffsetFetchResponse)
    finally:
        connection.close()
    (partition,) = answer.topics[0].partitions
    return partition.committed_offset, partition.error_code


def test_offsets_commit_with_the_transaction_wait_while_open_and_never_commit_on_abort(gateway_env):
    env = gateway_env
    source, sink = env.topic(1), env.topic(1)
    group = f"eos-{uuid.uuid4().hex[:8]}"
    feeder = Producer({"bootstrap.servers": env.broker})
    for n in range(30):
        feeder.produce(source, f"in-{n}".encode())
    feeder.flush(30)
    consumer = Consumer({"bootstrap.servers": env.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    producer.init_transactions(60)
    consumer.subscribe([source])

    def transaction(records: int, commit: bool) -> int:
        """Consume `records`, produce one output each, send the offsets, then commit or abort: the offset sent."""
        batch = []
        while len(batch) < records:
            batch += [m for m in consumer.consume(records - len(batch), 5) if not m.error()]
        producer.begin_transaction()
        for message in batch:
            producer.produce(sink, message.value().replace(b"in", b"out"))
        position = batch[-1].offset() + 1
        producer.send_offsets_to_transaction([TopicPartition(source, 0, position)],
                                             consumer.consumer_group_metadata(), 60)
        assert stable_fetch(env.bootstrap, group, source) == (-1, 88)  # UNSTABLE_OFFSET_COMMIT: pending
        (producer.commit_transaction if commit else producer.abort_transaction)(60)
        return position

    first = transaction(10, commit=True)
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (first, 0), what="the commit") is not None
    aborted = transaction(10, commit=False)
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source)[1] == 0, what="the abort") is not None
    assert stable_fetch(env.bootstrap, group, source) == (first, 0) and aborted > first
    consumer.seek(TopicPartition(source, 0, first))  # the application retries what the abort undid
    retried = transaction(10, commit=True)
    assert retried == aborted
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (retried, 0), what="the retry")
    assert env.committed(group, source) == {0: retried}
    consumer.close()
    # the gateway's AddPartitionsToTxn went to the transaction coordinator it looked up (FindCoordinator, key type 1)
    gateway_log = (env.logs / "gateway.log").read_text()
    looked_up = [line for line in gateway_log.splitlines() if f"transaction coordinator of 'tx-{group}':" in line]
    assert looked_up and all(line.endswith(f"({env.broker})") for line in looked_up), looked_up


def test_a_zombie_producer_is_fenced_and_its_offsets_never_commit(gateway_env):
    """Two producers with one transactional id: the first (the zombie, an older epoch) cannot put its offsets into
    a transaction; the second commits its own."""
    env = gateway_env
    source = env.topic(1)
    group = f"zombie-{uuid.uuid4().hex[:8]}"
    metadata = Consumer({"bootstrap.servers": env.bootstrap, "group.id": group}).consumer_group_metadata()
    zombie = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    zombie.init_transactions(60)
    zombie.begin_transaction()
    successor = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    successor.init_transactions(60)  # bumps the epoch: the zombie's transaction is aborted upstream
    with pytest.raises(KafkaException) as refused:
        zombie.send_offsets_to_transaction([TopicPartition(source, 0, 5)], metadata, 30)
        zombie.commit_transaction(30)
    assert refused.value.args[0].code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                            KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.INVALID_TXN_STATE)
    successor.begin_transaction()
    successor.send_offsets_to_transaction([TopicPartition(source, 0, 7)], metadata, 60)
    successor.commit_transaction(60)
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (7, 0), what="the successor's commit")


def polled_until(consumers: list[Consumer], owned: list[int], what: str) -> None:
    """Poll every consumer (librdkafka rejoins only from a poll: one left alone holds a rebalance for its
    max.poll.interval.ms) until each owns as many partitions as `owned` says; at most 60 s."""
    def done() -> bool:
        for consumer in consumers:
            consumer.poll(0.1)
        return [len(c.assignment()) for c in consumers] == owned
    wait_for(done, timeout_s=60, what=what)


def test_a_stale_generation_is_refused_and_the_member_commits_with_its_current_one(gateway_env):
    """KIP-447's fencing: offsets sent with the generation a member had before a rebalance (a zombie's) are
    refused with ILLEGAL_GENERATION, which librdkafka makes an abortable error; the abort leaves nothing committed
    or pending, and the same member's current generation commits."""
    env = gateway_env
    source = env.topic(2)
    group = f"stale-{uuid.uuid4().hex[:8]}"
    settings = {"bootstrap.servers": env.bootstrap, "group.id": group, "enable.auto.commit": False,
                "session.timeout.ms": 6000, "max.poll.interval.ms": 10000, "partition.assignment.strategy": "range"}
    first, second = Consumer(settings), Consumer(settings)
    producer = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    try:
        first.subscribe([source])
        polled_until([first], [2], "the first member's generation")
        stale = first.consumer_group_metadata()
        second.subscribe([source])
        polled_until([first, second], [1, 1], "the rebalance to two members")
        producer.init_transactions(30)
        producer.begin_transaction()
        with pytest.raises(KafkaException) as refused:
            producer.send_offsets_to_transaction([TopicPartition(source, 0, 5)], stale, 30)
        error = refused.value.args[0]
        assert error.code() == KafkaError.ILLEGAL_GENERATION and error.txn_requires_abort()
        producer.abort_transaction(30)
        assert stable_fetch(env.bootstrap, group, source) == (-1, 0)  # nothing committed, nothing pending
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(source, 0, 7)], first.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (7, 0), timeout_s=60,
                        what="the current generation's commit")
    finally:
        for consumer in (first, second):
            consumer.close()


def test_a_consumer_protocol_member_behind_its_epoch_is_refused_and_commits_at_its_current_one(gateway_env):
    """KIP-848 members (librdkafka, group.protocol=consumer): offsets sent with the member epoch a member had before
    a second member joined are refused as Kafka's consumer group refuses a transactional commit of a stale member
    epoch (ILLEGAL_GENERATION; a plain OffsetCommit would get STALE_MEMBER_EPOCH), abortable in librdkafka; the abort
    leaves nothing committed or pending, and the member's current epoch commits."""
    env = gateway_env
    source = env.topic(2)
    group = f"stale-epoch-{uuid.uuid4().hex[:8]}"
    settings = {"bootstrap.servers": env.bootstrap, "group.id": group, "enable.auto.commit": False,
                "group.protocol": "consumer"}
    first, second = Consumer(settings), Consumer(settings)
    producer = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    try:
        first.subscribe([source])
        polled_until([first], [2], "the first member's epoch")
        stale = first.consumer_group_metadata()
        second.subscribe([source])
        polled_until([first, second], [1, 1], "the second member's partition, the first's epoch bumped")
        moved = second.assignment()[0].partition  # the first member's no more: behind on it, whatever the epochs
        producer.init_transactions(30)
        producer.begin_transaction()
        with pytest.raises(KafkaException) as refused:
            producer.send_offsets_to_transaction([TopicPartition(source, moved, 5)], stale, 30)
        error = refused.value.args[0]
        assert error.code() in (KafkaError.ILLEGAL_GENERATION, KafkaError.STALE_MEMBER_EPOCH), error
        assert error.txn_requires_abort()
        producer.abort_transaction(30)
        assert env.committed(group, source) == {}
        owned = first.assignment()[0].partition
        producer.begin_transaction()
        producer.send_offsets_to_transaction([TopicPartition(source, owned, 7)], first.consumer_group_metadata(),
                                             30)
        producer.commit_transaction(30)
        assert wait_for(lambda: env.committed(group, source) == {owned: 7}, timeout_s=60,
                        what="the current epoch's commit")
    finally:
        for consumer in (first, second):
            consumer.close()


class BackToBack:
    """One producer's transactions back to back, each sending offset n (its n-th) for `partitions` with a member's
    metadata, until five have aborted (or `limit`, or `stop`): which committed, which aborted with what, and what
    failed otherwise (raised in the test's thread)."""

    def __init__(self, producer: Producer, topic: str, partitions: list[int], committed: list[int],
                 aborted: list[tuple[int, int]], failures: list[BaseException], limit: int) -> None:
        self.producer, self.topic, self.partitions, self.limit = producer, topic, partitions, limit
        self.committed, self.aborted, self.failures = committed, aborted, failures
        self.stop = threading.Event()

    def run(self, metadata: Any) -> None:
        producer, offset = self.producer, 0
        try:
            while len(self.aborted) < 5 and offset < self.limit and not self.stop.is_set():
                offset += 1
                producer.begin_transaction()
                try:
                    producer.send_offsets_to_transaction([TopicPartition(self.topic, p, offset)
                                                          for p in self.partitions], metadata, 30)
                    producer.commit_transaction(30)
                    self.committed.append(offset)
                except KafkaException as exc:
                    error = exc.args[0]
                    assert error.txn_requires_abort(), error
                    producer.abort_transaction(30)
                    self.aborted.append((offset, error.code()))
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            self.failures.append(exc)


TRANSACTION_ABORTABLE = 120
"""The gateway's answer to the EndTxn(COMMIT) of a transaction whose offsets, answered from a stale view, the
coordinator refused."""


@pytest.mark.parametrize("session_timeout_ms", [6000, 45000])
def test_a_member_replaced_through_another_gateway_never_commits_a_transaction_without_its_offsets(
        gateway_env, session_timeout_ms):
    """The zombie window: a static member replaced through a second gateway is fenced at once by the coordinator,
    while the first gateway's view still shows it for the follower's lag. Its producer runs transactions back to
    back across the replacement with the member's metadata: each one either commits with its offsets or aborts
    (refused at its TxnOffsetCommit, or, answered from the stale view, at its EndTxn: TRANSACTION_ABORTABLE), so the
    committed offset is the one the last committed transaction sent, and nothing stays pending. With a 6 s session
    every EndTxn waits for the coordinator's decisions (the session may end within the gateway's margin); with 45 s
    the gateway lets EndTxns through once it reads the member's heartbeat in the requests topic
    (`state.api.txn_settles`), and the replacement's JoinGroup between a view and a commit makes it wait again."""
    env = gateway_env
    source = env.topic(1)
    group = f"zombie-{uuid.uuid4().hex[:8]}"
    settings = {"group.id": group, "group.instance.id": "static-1", "enable.auto.commit": False,
                "session.timeout.ms": session_timeout_ms,
                "max.poll.interval.ms": 120000}  # the member is not polled meanwhile
    member = Consumer({**settings, "bootstrap.servers": env.bootstrap})
    replacement = Consumer({**settings, "bootstrap.servers": env.second.bootstrap_servers})
    producer = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}"})
    committed: list[int] = []
    aborted: list[tuple[int, int]] = []
    failures: list[BaseException] = []
    back_to_back = BackToBack(producer, source, [0], committed, aborted, failures, limit=2000)
    transactions = back_to_back.run  # once fenced, every transaction aborts

    try:
        member.subscribe([source])
        polled_until([member], [1], "the static member's assignment")
        producer.init_transactions(30)
        loop = threading.Thread(target=transactions, args=(member.consumer_group_metadata(),), daemon=True)
        loop.start()
        wait_for(lambda: len(committed) >= 3 or failures, timeout_s=60, what="the member's first transactions")
        if session_timeout_ms > 6000:
            shown = f"transactional id 'tx-{group}': a TxnOffsetCommit shown settled"
            wait_for(lambda: shown in (env.logs / "gateway.log").read_text() or failures, timeout_s=60,
                     what="an EndTxn not held for the coordinator's decisions")
        replacement.subscribe([source])
        polled_until([replacement], [1], "the replacement's assignment, through the second gateway")
        loop.join(timeout=300)
        assert not failures and not loop.is_alive()
        assert committed and aborted, (committed, aborted)
        print(f"committed {len(committed)}, aborted {aborted} (TRANSACTION_ABORTABLE: the view was stale)")
        assert wait_for(lambda: stable_fetch(env.bootstrap, group, source)[1] == 0, timeout_s=60,
                        what="the last transaction's marker applied")
        assert stable_fetch(env.bootstrap, group, source) == (committed[-1], 0)
        assert "shown settled but the coordinator decided" not in (env.logs / "gateway.log").read_text()
    finally:
        for consumer in (member, replacement):
            consumer.close()


KAFKA_CONSUMER_SESSION = {**GATEWAY_PROPERTIES, "group.consumer.session.timeout.ms": "45000"}
"""Kafka's consumer-group session (the package's query has 12 s, which a member's heartbeat, reported up to a
liveness interval after it was answered, leaves within the gateway's 10 s margin: every EndTxn would wait)."""


def test_a_consumer_protocol_members_transactions_go_unheld_and_none_commits_past_its_epoch(
        spark, broker, tmp_path_factory):
    """A KIP-848 member's transactions (librdkafka, group.protocol=consumer) run back to back with the metadata it
    had at the start, committing both of its partitions: once the gateway reads the member's heartbeat in the
    requests topic, their EndTxns go through without waiting for the coordinator's decisions (rules 1', 3', 4' of
    `state.views.txn_proof`). A second member then joins through another gateway and takes one partition: from
    when the first member's epoch moves on, its transactions are refused (behind its epoch on a partition it no
    longer holds), abortable, and aborted. Every transaction either commits with its offsets or aborts, none shown
    settled is decided otherwise, and the committed offsets are the last committed transaction's. On a query of its
    own with Kafka's 45 s consumer session (`KAFKA_CONSUMER_SESSION`)."""
    run = new_run(spark, broker, tmp_path_factory.mktemp("consumer-unheld"), KAFKA_CONSUMER_SESSION)
    logs = tmp_path_factory.mktemp("consumer-unheld-log")
    try:
        gateway = start_gateway(broker, {k: v for k, v in run.props.items() if k.startswith(("topic.", "group."))},
                                log_path=logs / "gateway.log")
        env = GatewayEnv(run, gateway, broker, logs)
        try:
            _consumer_protocol_transactions(env)
        finally:
            for started in (gateway, env._second):
                if started is not None:
                    started.stop()
    finally:
        run.close()


def _consumer_protocol_transactions(env: GatewayEnv) -> None:
    source = env.topic(2)
    group = f"cp-unheld-{uuid.uuid4().hex[:8]}"
    transactional_id = f"tx-{group}"
    settings = {"group.id": group, "enable.auto.commit": False, "group.protocol": "consumer"}
    first = Consumer({**settings, "bootstrap.servers": env.bootstrap})
    second = Consumer({**settings, "bootstrap.servers": env.second.bootstrap_servers})
    producer = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": transactional_id})
    committed: list[int] = []
    aborted: list[tuple[int, int]] = []
    failures: list[BaseException] = []
    back_to_back = BackToBack(producer, source, [0, 1], committed, aborted, failures, limit=5000)
    transactions, stop = back_to_back.run, back_to_back.stop  # behind its epoch, every one aborts

    loop = None
    try:
        first.subscribe([source])
        polled_until([first], [2], "the first member's partitions")
        producer.init_transactions(30)
        loop = threading.Thread(target=transactions, args=(first.consumer_group_metadata(),), daemon=True)
        loop.start()
        shown = f"transactional id {transactional_id!r}: a TxnOffsetCommit shown settled"
        assert wait_for(lambda: shown in (env.logs / "gateway.log").read_text() or failures, timeout_s=90,
                        what="a consumer-protocol transaction's EndTxn not held")
        assert not failures, failures
        assert not aborted, aborted  # nothing refused while the member is alone at its epoch
        second.subscribe([source])
        polled_until([first, second], [1, 1], "the second member's partition, through the second gateway")
        loop.join(timeout=300)
        assert not failures and not loop.is_alive(), failures
        assert committed and aborted, (committed, aborted)
        print(f"committed {len(committed)}, aborted {aborted}")
        assert wait_for(lambda: stable_fetch(env.bootstrap, group, source)[1] == 0, timeout_s=60,
                        what="the last transaction's marker applied")
        assert env.committed(group, source) == {0: committed[-1], 1: committed[-1]}
        assert "shown settled but the coordinator decided" not in (env.logs / "gateway.log").read_text()
    finally:
        stop.set()
        if loop is not None:
            loop.join(timeout=120)
        for consumer in (first, second):
            consumer.close()


def test_a_transaction_past_its_timeout_never_commits_its_offsets(gateway_env):
    """A producer that goes quiet inside its transaction: past transaction.timeout.ms its offsets are still not
    committed (pending: 88), and once the transaction is aborted the group's offset is the one before it. Kafka's transaction coordinator aborts
    it at the timeout and writes the ABORT marker itself; tansu never times a transaction out (measured: a
    transaction with a 2 s timeout still commits after 16 s), so here the producer's own abort ends it. (librdkafka
    bounds send_offsets_to_transaction by the timeout: the group's first commit waits for a micro-batch.)"""
    env = gateway_env
    source = env.topic(1)
    group = f"timeout-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": env.bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(source, 0, 2)], asynchronous=False)  # the group, before the clock runs
    producer = Producer({"bootstrap.servers": env.bootstrap, "transactional.id": f"tx-{group}",
                         "transaction.timeout.ms": 4000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition(source, 0, 9)], consumer.consumer_group_metadata(), 30)
    past_timeout = time.monotonic() + 6.0
    while time.monotonic() < past_timeout:
        assert stable_fetch(env.bootstrap, group, source) == (-1, 88)
        time.sleep(0.5)
    try:
        producer.abort_transaction(30)
    except KafkaException as exc:  # an upstream that aborted it at the timeout fences the producer's epoch
        assert exc.args[0].code() in REFUSED | {KafkaError._FENCED}
    assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (2, 0), timeout_s=60,
                    what="the aborted transaction's offsets dropped")
    consumer.close()


VANISHING_APP = """
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap, group, source, output, transactional_id = sys.argv[1:6]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "transaction.timeout.ms": 4000})
producer.init_transactions(60)
producer.begin_transaction()
producer.produce(output, b"never committed")
producer.send_offsets_to_transaction([TopicPartition(source, 0, 9)], consumer.consumer_group_metadata(), 60)
producer.flush(60)
print("open", flush=True)
sys.stdin.read()
"""


def test_a_transaction_nobody_ends_is_aborted_at_its_timeout_and_never_commits_its_offsets(gateway_env, tmp_path):
    """An application SIGKILLed inside its transaction, and the gateway it wrote its TxnOffsetCommit through killed
    -9 before any EndTxn: tansu never times the transaction out, so its offsets would stay pending (88) for ever.
    The query publishes its open transactions with their deadlines, and another gateway, which never saw this one,
    has the upstream abort it once it is past its timeout (InitProducerId for its transactional id, as Kafka's
    transaction coordinator aborts it at the timeout): the ABORT marker drops the pending offsets and the output,
    and the group's committed offset is the one before the transaction, never the transaction's."""
    env = gateway_env
    source, output = env.topic(1), env.topic(1)
    group = f"vanished-{uuid.uuid4().hex[:8]}"
    transactional_id = f"tx-{group}"
    consumer = Consumer({"bootstrap.servers": env.bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(source, 0, 2)], asynchronous=False)
    consumer.close()
    doomed = start_gateway(env.broker, env.topics, log_path=tmp_path / "doomed-gateway.log")
    app = subprocess.Popen([sys.executable, "-c", VANISHING_APP, doomed.bootstrap_servers, group, source, output,
                            transactional_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert app.stdout.readline().strip() == "open", "the application did not open its transaction"
        assert stable_fetch(env.bootstrap, group, source) == (-1, 88)
        os.kill(app.pid, signal.SIGKILL)
        os.kill(doomed.process.pid, signal.SIGKILL)
        seen = set()

        def aborted() -> bool:
            seen.add(stable_fetch(env.bootstrap, group, source))
            return (2, 0) in seen

        assert wait_for(aborted, timeout_s=120, what="the transaction aborted past its timeout")
        assert seen <= {(-1, 88), (2, 0)}, seen  # pending, then the offset before it: never the transaction's 9
        (marker,) = read_markers(env.broker, output, 0, [1])
        assert not marker.committed, marker
        logs = "".join(p.read_text() for p in env.logs.glob("*gateway.log"))  # the package's gateways'
        assert f"transaction {transactional_id!r}" in logs and "aborted at the upstream" in logs
        time.sleep(2)
        assert stable_fetch(env.bootstrap, group, source) == (2, 0)
    finally:
        for process in (app, doomed.process):
            if process.poll() is None:
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        doomed.stop()


def test_bad_transactional_commits_are_refused_and_the_gateway_keeps_serving(gateway_env):
    """An empty transactional id and a producer id the upstream never issued: the upstream refuses to add the
    group's partition to such a transaction, the gateway answers its error on every partition, nothing reaches the
    group, and the same connection is served on."""
    env = gateway_env
    source = env.topic(1)
    group = f"bad-{uuid.uuid4().hex[:8]}"
    connection = Connection(env.bootstrap)
    try:
        for transactional_id, producer_id in (("", 1), (f"tx-{group}", 987_654_321)):
            answer = connection.call(TxnOffsetCommitRequest[3](
                transactional_id=transactional_id, group_id=group, producer_id=producer_id, producer_epoch=0,
                generation_id=-1, member_id="", group_instance_id=None, topics=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=source, partitions=[
                        TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=3, committed_leader_epoch=-1,
                            committed_metadata="")])]), 3, TxnOffsetCommitResponse)
            (code,) = [p.error_code for t in answer.topics for p in t.partitions]
            assert code in REFUSED, (transactional_id, producer_id, code)
        assert stable_fetch(env.bootstrap, group, source) == (-1, 0)
    finally:
        connection.close()


def _txn_commit(connection: Connection, transactional_id: str, group: str, producer: Any, topic: str,
                offsets: dict[int, int], generation_id: int = -1, member_id: str = "") -> Counter:
    """A raw TxnOffsetCommit (v3) of `offsets` (partition -> offset): how many partitions got each error code."""
    answer = connection.call(TxnOffsetCommitRequest[3](
        transactional_id=transactional_id, group_id=group, producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch, generation_id=generation_id, member_id=member_id,
        group_instance_id=None, topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
            for p, o in offsets.items()])]), 3, TxnOffsetCommitResponse)
    return Counter(p.error_code for t in answer.topics for p in t.partitions)


def _end(connection: Connection, transactional_id: str, producer: Any, committed: bool) -> int:
    return connection.call(EndTxnRequest[1](transactional_id=transactional_id, producer_id=producer.producer_id,
                                            producer_epoch=producer.producer_epoch, committed=committed),
                           1, EndTxnResponse).error_code


def test_an_unknown_group_negative_offsets_and_50000_partitions_get_kafkas_answers(gateway_env):
    """With a producer id and epoch the upstream issued (InitProducerId v4: tansu answers v0-v2 with -1), through a
    raw connection: a member's TxnOffsetCommit to a group that does not exist is ILLEGAL_GENERATION, as Kafka's
    validateTransactionalOffsetCommit; a negative offset is taken as Kafka takes it (no check on the value); one
    request with 50,000 partitions, too large for a control-topic record, gets INVALID_COMMIT_OFFSET_SIZE on every
    partition (before, tansu took the record and the query failed writing its answer); and after each transaction
    ends the same connection, gateway and query serve on: the group's offsets are what the transactions left."""
    env = gateway_env
    source = env.topic(1)
    group = f"wide-{uuid.uuid4().hex[:8]}"
    transactional_id = f"tx-{group}"
    connection = Connection(env.bootstrap)
    try:
        producer = connection.call(InitProducerIdRequest[4](
            transactional_id=transactional_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1),
            4, InitProducerIdResponse)
        assert producer.error_code == 0 and producer.producer_id >= 0, producer
        unknown = _txn_commit(connection, transactional_id, group, producer, source, {0: 3}, 5, "no-such-member")
        assert unknown == Counter({Errors.ILLEGAL_GENERATION: 1}), unknown
        assert _end(connection, transactional_id, producer, False) == 0
        assert stable_fetch(env.bootstrap, group, source) == (-1, 0)

        negative = _txn_commit(connection, transactional_id, group, producer, source, {0: -5})
        assert negative == Counter({0: 1}), negative
        assert _end(connection, transactional_id, producer, True) == 0
        assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (-5, 0), timeout_s=60,
                        what="the negative offset committed")

        wide = _txn_commit(connection, transactional_id, group, producer, source,
                           {p: 7 for p in range(50_000)})
        # too large for the control topic's records, as Kafka's coordinator answers a commit too large for its log
        assert wide == Counter({Errors.INVALID_COMMIT_OFFSET_SIZE: 50_000}), wide
        assert _end(connection, transactional_id, producer, False) == 0
        assert stable_fetch(env.bootstrap, group, source) == (-5, 0)

        again = _txn_commit(connection, transactional_id, group, producer, source, {0: 9})
        assert again == Counter({0: 1}), again
        assert _end(connection, transactional_id, producer, True) == 0
        assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (9, 0), timeout_s=60,
                        what="a transaction after the wide one committed")
    finally:
        connection.close()


def bounded(call: Callable[..., Any], *args: Any, timeout_s: float = 60) -> Any:
    """`call(*args)`, failing the test after `timeout_s` (kafka-python's transactional calls wait unbounded)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call, *args).result(timeout=timeout_s)


def test_kafka_python_commits_aborts_and_a_replaced_static_member_is_fenced(gateway_env):
    """kafka-python 3's transactional producer with its consumer's group metadata (KIP-447): commit, abort, and
    offsets sent for a static member's instance id under another member id: FENCED_INSTANCE_ID, abortable."""
    env = gateway_env
    source = env.topic(1)
    group = f"kpy-{uuid.uuid4().hex[:8]}"
    consumer = KafkaConsumer(source, bootstrap_servers=env.bootstrap, group_id=group, group_instance_id="static-1",
                             enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=1000)
    producer = KafkaProducer(bootstrap_servers=env.bootstrap, transactional_id=f"tx-{group}")
    try:
        wait_for(lambda: consumer.poll(200) is not None and consumer.assignment(), timeout_s=60,
                 what="the static member's assignment")
        metadata = consumer.group_metadata()
        bounded(producer.init_transactions)
        for offset, end in ((4, producer.commit_transaction), (6, producer.abort_transaction)):
            producer.begin_transaction()
            bounded(producer.send_offsets_to_transaction, {KafkaPythonPartition(source, 0): OffsetAndMetadata(offset)},
                    metadata)
            bounded(end)
            assert wait_for(lambda: stable_fetch(env.bootstrap, group, source)[1] == 0, timeout_s=60,
                            what="the transaction's marker applied")
            assert stable_fetch(env.bootstrap, group, source) == (4, 0)
        producer.begin_transaction()
        impostor = metadata._replace(member_id="another-member")
        with pytest.raises(kafka_errors.FencedInstanceIdError):
            bounded(producer.send_offsets_to_transaction, {KafkaPythonPartition(source, 0): OffsetAndMetadata(9)},
                    impostor)
        bounded(producer.abort_transaction)
        assert stable_fetch(env.bootstrap, group, source) == (4, 0)
    finally:
        producer.close(timeout=5)
        consumer.close()


def test_an_exactly_once_loop_sigkilled_every_few_seconds_covers_every_input_once(gateway_env, tmp_path):
    """An exactly-once application (deploy/drills/eos_app.py: a static member, one transactional id) over 2,000
    input records, SIGKILLed two to four seconds after each start and started again, then left to finish: every
    input offset is in exactly one committed transaction's output (judged from the sink's markers, as tansu's
    read_committed also shows aborted records), and the group's committed offset is the input's end."""
    import random
    import subprocess
    import sys

    env = gateway_env
    source, sink = env.topic(1), env.topic(1)
    group = f"eos-{uuid.uuid4().hex[:8]}"
    feeder = Producer({"bootstrap.servers": env.broker, "linger.ms": 5})
    for n in range(2000):
        feeder.produce(source, f"in-{n}".encode())
    feeder.flush(60)
    spec = json.dumps({"bootstrap": env.bootstrap, "source": source, "sink": sink, "group": group,
                       "transactional_id": f"tx-{group}", "instance_id": "eos-1", "records": 20})
    rng = random.Random(32)
    kills = 0
    app: subprocess.Popen | None = None
    try:
        for _ in range(8):
            app = subprocess.Popen([sys.executable, "-m", "deploy.drills.eos_app", spec], stdout=subprocess.PIPE,
                                   stderr=open(tmp_path / f"app-{kills}.log", "w"), text=True)
            time.sleep(rng.uniform(2.0, 4.0))
            app.kill()
            app.wait(30)
            kills += 1
            app = None
        app = subprocess.Popen([sys.executable, "-m", "deploy.drills.eos_app", spec], stdout=subprocess.PIPE,
                               stderr=open(tmp_path / "app-last.log", "w"), text=True)
        assert wait_for(lambda: stable_fetch(env.bootstrap, group, source) == (2000, 0), timeout_s=300,
                        what="every input committed")
    finally:
        if app is not None:
            app.kill()
            app.wait(30)
    outcomes = sink_outcomes(env.broker, sink)
    committed = sorted(value for value, outcome in outcomes if outcome == 1)
    aborted = sum(1 for _, outcome in outcomes if outcome != 1)
    print(f"{kills} kills; {len(committed)} output records committed, {aborted} aborted or left open")
    assert committed == list(range(2000))
    assert stable_fetch(env.bootstrap, group, source) == (2000, 0)
