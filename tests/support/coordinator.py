"""A running coordinator query on fresh topics, for integration and end-to-end tests.

`CoordinatorRun` is what the `coordinator` fixture factory returns: it owns its topics (unique names), its
checkpoint directory and its query, and offers `send` / `request` / `responses` so tests read like the protocol.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
import time
from typing import Any, Callable, Mapping, TypeVar

from kafka import KafkaProducer
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from common import config as job_config
from common.config import Topics
from common.topics import ensure_topics
from streaming.query import start_query
from streaming.recovery.lease import RELEASED, LeaseRecord, LeaseSettings, checkpoint_key
from tests.support.kafka import ResponseReader, producer, read_topic, send_raw, send_requests

NO_RETENTION_CHECK_MS = str(10**13)
"""An `offsets.retention.check.interval.ms` whose first check is in the year 2286."""

RELAXED_LEASE = {"lease.timeout.ms": "60000", "lease.renew.interval.ms": "1000"}
"""For tests that run `coordinator run` but are not about the lease: a driver starved of CPU for seconds on a loaded
machine would lose a lease of a few seconds and halt (exit 75), which is the lease working, not what they test.
A fresh driver watches one timeout for a holder before it takes a free lease: where the broker runs before the job,
`release_lease` spares those 60 s."""


def release_lease(bootstrap: str, props: Mapping[str, str]) -> None:
    """Leave the checkpoint's lease as a driver that stopped cleanly leaves it (a release record under its key), so
    that the next driver takes it at once instead of watching one `lease.timeout.ms` for a holder
    (streaming/recovery/lease.py). `props`: the job's properties, as overrides of its defaults."""
    job = job_config.load(overrides=props)
    settings = LeaseSettings.from_properties(job)
    ensure_topics({"bootstrap_servers": bootstrap}, job)
    released = LeaseRecord("a driver that stopped before the test", 0, RELEASED, int(settings.timeout_s * 1000))
    with closing(KafkaProducer(bootstrap_servers=bootstrap)) as out:
        out.send(settings.topic, key=settings.key.encode(), value=released.encode(), partition=0).get(30)

TEST_PROPERTIES = {
    # Short enough that tests wait seconds, not minutes; the session bounds keep Kafka's 6 s minimum unless a
    # test lowers it.
    "group.initial.rebalance.delay.ms": "500",
    # The offsets retention check runs at wall-clock multiples of its interval (every 10 minutes by default) and,
    # as Kafka's, deletes an Empty group without offsets, pending members and all: a MEMBER_ID_REQUIRED handshake
    # that straddles one gets UNKNOWN_MEMBER_ID on its second JoinGroup. Tests that are not about retention move
    # the next check to the year 2286 (tests/state/test_offsets.py covers the check itself).
    "offsets.retention.check.interval.ms": NO_RETENTION_CHECK_MS,
    "trigger.interval.ms": "100",
    "topic.requests.partitions": "2",
    "topic.responses.partitions": "2",
    "topic.records.partitions": "2",
    "topic.dead.letters.partitions": "1",
    "metrics.log": "",
}

_ids = itertools.count()
T = TypeVar("T")


@dataclass
class CoordinatorRun:
    spark: SparkSession
    bootstrap: str
    props: dict[str, str]
    query: StreamingQuery | None = None
    _reader: ResponseReader | None = field(default=None, repr=False)

    @property
    def topics(self) -> Topics:
        return Topics.from_properties(self.props)

    def start(self) -> "CoordinatorRun":
        """Start (or restart, on the same checkpoint) the query."""
        self.query = start_query(self.spark, self.props, query_name=f"coordinator-{self.topics.requests}")
        return self

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()
            self.query = None

    @property
    def responses(self) -> ResponseReader:
        if self._reader is None:
            self._reader = ResponseReader(self.bootstrap, self.topics.responses)
        return self._reader

    def send(self, *requests: dict[str, Any]) -> None:
        if not hasattr(self, "_producer"):
            self._producer = producer(self.bootstrap)
        send_requests(self._producer, self.topics.requests, requests)

    def send_raw(self, value: bytes, key: bytes | None = None) -> None:
        if not hasattr(self, "_producer"):
            self._producer = producer(self.bootstrap)
        send_raw(self._producer, self.topics.requests, value, key)

    def request(self, request: dict[str, Any], timeout_s: float = 180.0) -> dict[str, Any]:
        """Send one request (a `request_id` is added if missing) and wait for its response."""
        request = {"request_id": f"r{next(_ids)}-{uuid.uuid4().hex[:6]}", **request}
        self.send(request)
        return self.responses.wait_for(request["request_id"], timeout_s)

    def read(self, topic: str):
        return read_topic(self.bootstrap, topic)

    def wait(self, probe: Callable[[], T | None], timeout_s: float = 180.0, every_s: float = 0.25) -> T:
        """Poll `probe` until it returns something truthy (an upper bound, not a timing expectation)."""
        deadline = time.monotonic() + timeout_s
        while not (result := probe()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met within {timeout_s} s")
            time.sleep(every_s)
        return result

    def forget_last_commit(self) -> None:
        """Delete the newest entry of the checkpoint's commit log (query stopped), as if the driver had died after
        the sink wrote the batch and before Spark recorded it: the next start replays that batch."""
        commits = Path(self.props["checkpoint.location"]) / "commits"
        last = max((f for f in commits.iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
        last.unlink()
        (commits / f".{last.name}.crc").unlink(missing_ok=True)

    def close(self) -> None:
        self.stop()
        if self._reader is not None:
            self._reader.close()
        if hasattr(self, "_producer"):
            self._producer.close()


def new_run(spark: SparkSession, bootstrap: str, workdir: Path, overrides: Mapping[str, str] | None = None,
            start: bool = True) -> CoordinatorRun:
    """Fresh topics (unique names), a checkpoint under `workdir`, the job's defaults + test settings + `overrides`."""
    suffix = uuid.uuid4().hex[:8]
    props = job_config.load(overrides={
        **TEST_PROPERTIES,
        "bootstrap.servers": bootstrap,
        "topic.requests": f"requests-{suffix}",
        "topic.responses": f"responses-{suffix}",
        "topic.records": f"records-{suffix}",
        "topic.dead.letters": f"dead-letters-{suffix}",
        "topic.timers": f"timers-{suffix}",
        "topic.views": f"views-{suffix}",
        "checkpoint.location": str(workdir / f"checkpoint-{suffix}"),
        **(overrides or {}),
    })
    ensure_topics({"bootstrap_servers": bootstrap}, props)
    run = CoordinatorRun(spark, bootstrap, props)
    return run.start() if start else run


def lease_times(bootstrap: str, props: Mapping[str, str], holder_pid: int) -> list[int]:
    """The `time_ms` of every lease record the driver with process id `holder_pid` wrote, in log order."""
    return [json.loads(r.value)["time_ms"] for r in read_topic(bootstrap, props["topic.lease"], timeout_s=120)
            if r.key == checkpoint_key(props["checkpoint.location"]).encode()
            and LeaseRecord.decode(r.value).holder.split("/")[1] == str(holder_pid)]


def loads_and_lease_times(bootstrap: str, props: Mapping[str, str], holder_pid: int) -> tuple[list[int], list[int]]:
    """The LoadGroup records' timestamps in the control topic (the driver's clock, CreateTime), and `lease_times`.
    The suite's shared broker holds thousands of lease and request records by then: the timeouts are upper bounds,
    not speeds."""
    loads = [r.timestamp for r in read_topic(bootstrap, props["topic.requests"], timeout_s=120)
             if r.value.startswith(b'{"api":"LoadGroup"')]
    return loads, lease_times(bootstrap, props, holder_pid)


SPARK_CHECKPOINT_FILE = re.compile(
    r"(metadata|(offsets|commits)/\d+|sources/\d+/\d+|state/\d+/(_metadata/.*|_stateSchema/.*|\d+/.*))")
"""What Spark itself writes under a checkpoint (each may have a `.crc` sibling, `.name.crc`)."""


def files_not_sparks(checkpoint: str) -> list[str]:
    """Files under `checkpoint` that Spark would not have written there. A running query's files being written
    (`.name.<uuid>.tmp`) count as the file they become."""
    paths = [f.relative_to(checkpoint).as_posix() for f in Path(checkpoint).rglob("*") if f.is_file()]
    paths = [re.sub(r"(^|/)\.([^/]*)\.crc$", r"\1\2", path) for path in paths]
    paths = [re.sub(r"(^|/)\.([^/]*)\.[0-9a-f-]{36}(\.TID\d+)?\.tmp$", r"\1\2", path) for path in paths]
    return [path for path in paths if not SPARK_CHECKPOINT_FILE.fullmatch(path)]
