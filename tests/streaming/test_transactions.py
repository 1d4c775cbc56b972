"""Transactional offset commits through the real query: a TxnOffsetCommit written into the producer's transaction
on the group's control-topic partition (what the gateway does for a client, issue 32's design (a)) is pending until
the upstream's marker lands after it; COMMIT makes it the group's offset, ABORT drops it."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from common.markers import read_markers
from state.errors import Errors

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_offsets_commit_with_the_transaction_and_never_with_an_aborted_one(coordinator):
    run = coordinator()
    scratch = f"scratch-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": run.bootstrap})
    admin.create_topics([NewTopic(scratch, 1, 1)])[scratch].result()
    producer = Producer({"bootstrap.servers": run.bootstrap, "transactional.id": f"tx-{scratch}",
                         "partitioner": "murmur2_random"})  # the control topic's: a group's requests in one partition
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(scratch, b"first")
    producer.commit_transaction(30)
    (first,) = read_markers(run.bootstrap, scratch, 0, [1])  # the producer id the upstream gave it

    def transaction(offset: int, commit: bool) -> None:
        producer.begin_transaction()
        producer.produce(run.topics.requests, json.dumps({
            "api": "TxnOffsetCommit", "api_version": 4, "request_id": f"txn-{offset}", "group_id": "eos",
            "transactional_id": f"tx-{scratch}", "producer_id": first.producer_id,
            "producer_epoch": first.producer_epoch,
            "topics": [{"name": "in", "partitions": [{"partition_index": 0, "committed_offset": offset}]}],
        }).encode(), b"eos")
        producer.flush()
        assert run.responses.wait_for(f"txn-{offset}", 180)["error_code"] == Errors.NONE
        assert stable_fetch() == (-1, Errors.UNSTABLE_OFFSET_COMMIT)  # pending: a new owner waits
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    def stable_fetch() -> tuple[int, int]:
        response = run.request({"api": "OffsetFetch", "api_version": 8, "group_id": "eos", "require_stable": True,
                                "topics": [{"name": "in", "partition_indexes": [0]}]})
        (partition,) = response["topics"][0]["partitions"]
        return partition["committed_offset"], partition["error_code"]

    transaction(10, commit=True)
    assert run.wait(lambda: (f := stable_fetch())[1] == Errors.NONE and f) == (10, Errors.NONE)
    transaction(20, commit=False)
    assert run.wait(lambda: (f := stable_fetch())[1] == Errors.NONE and f) == (10, Errors.NONE)
    transaction(30, commit=True)  # a retry after the abort
    assert run.wait(lambda: (f := stable_fetch())[1] == Errors.NONE and f) == (30, Errors.NONE)
