"""Benchmark: what the Kafka gateway costs its clients, against the same clients without it, in one run.

1. Fetch throughput. A topic of `--mib` MiB (6 partitions, 1 KiB records) on an embedded tansu is read from the
   beginning by an unmodified consumer, straight from the broker and through a gateway in front of it, alternating,
   `--rounds` times each, with kafka-python's KafkaConsumer and with librdkafka's Consumer. Goal: the gateway
   gives at least 0.8x the direct MiB/s.
2. Gateway overhead on group requests. Heartbeat, OffsetCommit (6 partitions) and OffsetFetch, one at a time,
   alternating between a raw Kafka connection to the gateway and the very control request the gateway would write,
   sent straight to the control topic with the transport the gateway itself uses (`client.transport`, submit and
   await the answer). The gateway's overhead is the difference of the two round trips. tansu holds a fetch for its
   whole wait even when data arrives, so both readers of the response topic (the gateway's and the direct one) use
   the same short wait (`--response-fetch-wait-ms`, the gateway's option of that name), and a random pause before
   each request keeps the two paths from locking onto different phases of their fetch loops. Against two
   coordinators:
   the core alone (`state.batch.step_group` per request in a small responder process, no Spark: round trips of a
   few ms, so a difference of one is not lost in the noise), and the real coordinator query (`--no-query` skips
   it: its micro-batches make each round trip hundreds of ms, and the difference mostly noise). Goal: p50
   overhead <= 2 ms. Neither publishes views to these gateways (the core responder none, and the gateways in front
   of the query run with `--fast-answers-by-coordinator`): this is the path of every request that waits for the
   coordinator.

3. What authorization costs. With `--authorization both` (the default) every gateway above runs twice, without
   and with `--authorization` (Kafka's ACLs checked on every request, the bench's principal allowed by PREFIXED
   ACLs on its topics and groups, so every check walks bindings), and the ratios on/off are printed: the goal is
   within 10% (fetch throughput at least 0.9x, group overhead no more than 1.1x). `off` or `on` runs one.

4. The fast path, in front of the real coordinator query (`bench.parts.gateway_fast`; `--no-query` skips it): commit
   and heartbeat latency against a forwarded acks=all produce and ApiVersions through the same gateway, and tansu's own
   coordinator's in the same run; control records per member-minute of ten idle members; three librdkafka
   consumers that commit every record, through the gateway and on tansu's coordinator.

Prints one JSON document: figures, ratios and the load average before and after; then tansu's figures beside ours,
and last issue 24's line: `gateway latency: commit p50/produce p50 = A, commit p99/produce p99 = B, heartbeat
p50/ApiVersions p50 = C, heartbeat p99/ApiVersions p99 = D, control records per member-minute = E`. The gateways
run in their own processes, as in production; everything shares this machine's cores.
Run with `python -m bench.gateway_bench [--mib N] [--rounds R] [--samples N] [--no-query] [--authorization M]
[--fast-samples N] [--liveness-seconds S]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, OffsetCommitRequest,
                                           OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse)

from bench.parts import commit_clients, gateway_fast, many_committers
from bench.stream_bench import RawConnection, percentiles
from client.transport import KafkaTransport
from common import config as job_config
from common.topics import ensure_topics
from gateway.upstream.control import GROUP_APIS, control_requests, to_json
from gateway.front.process import start_gateway
from streaming.kafka_io.embedded import start_broker

PARTITIONS = 6
RECORD = 1024


# -- 1. Fetch throughput -----------------------------------------------------------------------------------------


def fill(bootstrap: str, topic: str, mib: int) -> int:
    """`mib` MiB of 1 KiB records over PARTITIONS partitions; returns the record count."""
    KafkaAdminClient(bootstrap_servers=bootstrap).create_topics([NewTopic(topic, PARTITIONS, 1)])
    count = mib * 1024 * 1024 // RECORD
    value = os.urandom(RECORD)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=1 << 20,
                             max_request_size=8 << 20)
    for i in range(count):
        producer.send(topic, value, partition=i % PARTITIONS)
    producer.flush()
    producer.close()
    return count


def read_kafka_python(servers: str, topic: str, count: int) -> float:
    consumer = KafkaConsumer(bootstrap_servers=servers, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    seen = 0
    started = time.perf_counter()
    while seen < count:
        seen += sum(len(records) for records in consumer.poll(timeout_ms=1000, max_records=50_000).values())
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def read_librdkafka(servers: str, topic: str, count: int) -> float:
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CkPartition

    # tansu holds a fetch for fetch.wait.max.ms whenever librdkafka's incremental fetch session lists no
    # partitions (most of its fetches): the default 500 ms would make the broker, not the path, the bottleneck.
    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    consumer.assign([CkPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen = 0
    started = time.perf_counter()
    while seen < count:
        seen += sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def fetch_throughput(broker: str, gateways: dict[str, str], mib: int, rounds: int) -> dict:
    topic = f"bench-fetch-{uuid.uuid4().hex[:6]}"
    count = fill(broker, topic, mib)
    readers: dict[str, Callable[[str, str, int], float]] = {"kafka-python": read_kafka_python}
    try:
        import confluent_kafka  # noqa: F401
        readers["librdkafka"] = read_librdkafka
    except ImportError:
        pass
    out = {}
    for name, read in readers.items():
        direct: list[float] = []
        through: dict[str, list[float]] = {mode: [] for mode in gateways}
        for _ in range(rounds):
            direct.append(mib / read(broker, topic, count))
            for mode, gateway in gateways.items():
                through[mode].append(mib / read(gateway, topic, count))
        d = statistics.median(direct)
        out[name] = {"direct_mib_s": round(d, 1), "direct_rounds": [round(x, 1) for x in direct]}
        for mode, rounds_ in through.items():
            g = statistics.median(rounds_)
            out[name][f"gateway_{mode}"] = {"mib_s": round(g, 1), "ratio": round(g / d, 2),
                                            "rounds": [round(x, 1) for x in rounds_]}
        if len(through) == 2:
            out[name]["authorization_on_over_off"] = round(
                statistics.median(through["on"]) / statistics.median(through["off"]), 3)
    return {"mib": mib, "records": count, "record_bytes": RECORD, "partitions": PARTITIONS, "readers": out,
            "goal": "ratio >= 0.8"}


# -- 2. Gateway overhead on group requests -----------------------------------------------------------------------


def _core_responder(bootstrap: str, requests: str, responses: str) -> None:
    """The coordinator core without Spark: each control request through `step_group`, answered at once."""
    from state.batch import route, step_group
    from state.config import CoordinatorConfig

    config = CoordinatorConfig()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             fetch_max_wait_ms=5)
    partitions = None
    while not partitions:
        partitions = consumer.partitions_for_topic(requests)
    consumer.assign([TopicPartition(requests, p) for p in partitions])
    consumer.seek_to_beginning()  # fresh topics: whatever was sent before this process was ready is answered too
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    states: dict[str, Any] = {}
    """Group id -> the StoredGroup to pass to its next step."""
    while True:
        for records in consumer.poll(timeout_ms=100).values():
            for record in records:
                where = route(record.key, record.value)
                if where.kind != "group":
                    continue
                step = step_group(where.group_id, states.get(where.group_id), [record.value],
                                  int(time.time() * 1000), config)
                states[where.group_id] = step.stored(states.get(where.group_id))
                for response in step.responses:
                    producer.send(responses, key=where.group_id.encode(), value=response)
        producer.flush()


def _requests(group: str, topic: str) -> dict[str, tuple[Any, type, int]]:
    """One request of each measured kind: (Kafka request, response class, version)."""
    commit_topic = OffsetCommitRequest.OffsetCommitRequestTopic
    commit_partition = commit_topic.OffsetCommitRequestPartition
    fetch_topic = OffsetFetchRequest.OffsetFetchRequestTopic
    return {
        "Heartbeat": (HeartbeatRequest[4](group_id=group, generation_id=-1, member_id="bench",
                                          group_instance_id=None), HeartbeatResponse, 4),
        "OffsetCommit": (OffsetCommitRequest[8](
            group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[commit_topic(name=topic, partitions=[commit_partition(
                partition_index=p, committed_offset=100 + p, committed_leader_epoch=-1, committed_metadata="")
                for p in range(PARTITIONS)])]), OffsetCommitResponse, 8),
        "OffsetFetch": (OffsetFetchRequest[7](group_id=group, require_stable=False, topics=[
            fetch_topic(name=topic, partition_indexes=list(range(PARTITIONS)))]), OffsetFetchResponse, 7),
    }


def _control_body(request: Any, version: int) -> dict:
    """Exactly what the gateway writes for `request`."""
    api = GROUP_APIS[request.API_KEY]
    (body,) = control_requests(api, version, to_json(request, version), None)
    return body


async def _round_trips(port: int, transport: KafkaTransport, samples: int, pause_s: float) -> dict:
    connection = await RawConnection.open(port)
    results = {}
    try:
        for kind, (request, response_class, version) in _requests(f"bench-{uuid.uuid4().hex[:6]}",
                                                                    "bench-topic").items():
            body = _control_body(request, version)
            direct, through = [], []
            for _ in range(samples):
                time.sleep(random.uniform(0, pause_s))
                started = time.perf_counter()
                request_id, answer = transport.submit(body["group_id"], body)
                answer.result(timeout=60)
                transport.forget(request_id)
                direct.append(time.perf_counter() - started)
                started = time.perf_counter()
                await asyncio.wait_for(connection.send(request, version, response_class), 60)
                through.append(time.perf_counter() - started)
                await asyncio.sleep(random.uniform(0, pause_s))
            d, g = percentiles(direct), percentiles(through)
            results[kind] = {"direct": d, "gateway": g,
                             "overhead_p50_ms": round(g["p50_ms"] - d["p50_ms"], 2),
                             "overhead_p99_ms": round(g["p99_ms"] - d["p99_ms"], 2)}
    finally:
        connection.close()
    return results


def group_overhead(bootstrap: str, props: dict[str, str], wait_ms: int, samples: int, log: Path,
                   mode: str = "off") -> dict:
    gateway = start_gateway(bootstrap, _gateway_props(props, mode),
                            args=["--response-fetch-wait-ms", str(wait_ms), "--fast-answers-by-coordinator",
                                  *MODES[mode]],
                            log_path=log)
    transport = KafkaTransport(bootstrap, props["topic.requests"], props["topic.responses"],
                               client_id="bench-direct", fetch_max_wait_ms=wait_ms)
    try:
        transport.watch_all(60)
        port = int(gateway.bootstrap_servers.rpartition(":")[2])
        # a first request of each kind on both paths, so that no connection or partition set-up is timed
        asyncio.run(_round_trips(port, transport, 1, 0))
        return asyncio.run(_round_trips(port, transport, samples, wait_ms / 1000))
    finally:
        transport.close()
        gateway.stop()


def _fresh_topics(bootstrap: str, workdir: Path) -> dict[str, str]:
    suffix = uuid.uuid4().hex[:6]
    props = job_config.load(overrides={
        "bootstrap.servers": bootstrap, "checkpoint.location": str(workdir / f"checkpoint-{suffix}"),
        "topic.requests": f"bench-requests-{suffix}", "topic.responses": f"bench-responses-{suffix}",
        "topic.records": f"bench-records-{suffix}", "topic.dead.letters": f"bench-dead-letters-{suffix}"})
    ensure_topics({"bootstrap_servers": bootstrap}, props)
    return props


def _topics(props: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in props.items() if k.startswith("topic.")}


# -- 3. Authorization on and off ---------------------------------------------------------------------------------

MODES = {"off": [], "on": ["--authorization"]}
"""The gateway's arguments per mode."""
ACLS_TOPIC = "bench-acls"


def grant_bench_acls(bootstrap: str) -> None:
    """What the bench's principal (User:ANONYMOUS: its clients do not authenticate) may do: everything on the
    topics and groups named bench-*, through PREFIXED bindings, plus unrelated bindings a check walks past. Written
    to the ACL topic as a gateway would write them (CreateAcls needs an authenticated administrator)."""
    from gateway.security.acl import AclBinding, AclOperation, AclPermissionType, Authorizer, PatternType, ResourceType
    from gateway.security.topics import SecurityTopics, acl_record

    bindings = [AclBinding(rtype, "bench-", PatternType.PREFIXED, "User:ANONYMOUS", "*", AclOperation.ALL,
                           AclPermissionType.ALLOW) for rtype in (ResourceType.TOPIC, ResourceType.GROUP)]
    bindings += [AclBinding(ResourceType.TOPIC, f"other-{i}", PatternType.LITERAL, f"User:u{i}", "*",
                            AclOperation.READ, AclPermissionType.ALLOW) for i in range(100)]
    security = SecurityTopics(bootstrap, {}, ACLS_TOPIC, "bench-scram-credentials", Authorizer())
    security.start()
    try:
        security.write(ACLS_TOPIC, [acl_record(b, True) for b in bindings])
    finally:
        security.close()


def _gateway_props(props: dict[str, str], mode: str) -> dict[str, str]:
    return {**_topics(props), "topic.acls": ACLS_TOPIC, "topic.scram.credentials": "bench-scram-credentials"} \
        if mode == "on" else _topics(props)


def with_core(bootstrap: str, workdir: Path, wait_ms: int, samples: int, modes: list[str]) -> dict:
    props = _fresh_topics(bootstrap, workdir)
    responder = multiprocessing.get_context("spawn").Process(
        target=_core_responder, args=(bootstrap, props["topic.requests"], props["topic.responses"]), daemon=True)
    responder.start()
    try:
        out = {f"authorization_{mode}": group_overhead(bootstrap, props, wait_ms, samples,
                                                       workdir / f"gateway-core-{mode}.log", mode)
               for mode in modes}
        if len(modes) == 2:
            # Each mode's round trips through the gateway over the same request sent straight, in one alternating
            # run (so a load that changes between the two modes cancels out), then on over off.
            ratio = {mode: {kind: r["gateway"]["p50_ms"] / r["direct"]["p50_ms"]
                            for kind, r in out[f"authorization_{mode}"].items()} for mode in modes}
            out["authorization_on_over_off_p50_ratio"] = {kind: round(ratio["on"][kind] / ratio["off"][kind], 3)
                                                          for kind in ratio["off"]}
        return out
    finally:
        responder.terminate()
        responder.join()


def with_query(bootstrap: str, workdir: Path, wait_ms: int, samples: int, modes: list[str]) -> dict:
    from streaming.query import spark_session, start_query

    props = _fresh_topics(bootstrap, workdir)
    spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
    query = start_query(spark, props)
    try:
        return {f"authorization_{mode}": group_overhead(bootstrap, props, wait_ms, samples,
                                                        workdir / f"gateway-query-{mode}.log", mode)
                for mode in modes}
    finally:
        query.stop()


def with_fast_path(bootstrap: str, workdir: Path, samples: int, liveness_s: float) -> dict:
    """The fast path's figures (`bench.parts.gateway_fast`), a gateway in front of the real coordinator query."""
    from streaming.query import spark_session, start_query

    props = _fresh_topics(bootstrap, workdir)
    spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
    query = start_query(spark, props)
    gateway = start_gateway(bootstrap, _topics(props), log_path=workdir / "gateway-fast.log")
    out: dict[str, Any] = {}
    try:
        out["latency"] = gateway_fast.latency(gateway.bootstrap_servers, bootstrap, samples)
        out["load_average_after_latency"] = os.getloadavg()
        out["control_records"] = gateway_fast.control_records_per_member_minute(
            gateway.bootstrap_servers, bootstrap, props["topic.requests"], liveness_s)
        out["three_consumers_commit_every_record"] = three = {
            "gateway": gateway_fast.three_consumers(gateway.bootstrap_servers, bootstrap),
            "tansu": gateway_fast.three_consumers(bootstrap, bootstrap),
            "gateway_consumer_protocol": gateway_fast.three_consumers(gateway.bootstrap_servers, bootstrap,
                                                                      group_protocol="consumer")}
        three["ratio"] = round(three["gateway"]["seconds_to_commit_all"] / three["tansu"]["seconds_to_commit_all"], 2)
        three["ratio_with_forming"] = round(three["gateway"]["seconds"] / three["tansu"]["seconds"], 2)
        three["consumer_protocol_ratio"] = round(three["gateway_consumer_protocol"]["seconds_to_commit_all"]
                                                 / three["tansu"]["seconds_to_commit_all"], 2)
        three["goal"] = "ratio <= 2"
    finally:
        gateway.stop()
        query.stop()
    return out


def compare_fast_paths(bootstrap: str, workdir: Path, samples: int, rounds: int, gateway_args: list[str],
                       compare_args: list[str], pause_query: bool, broker_pid: int,
                       compare_source: Path | None = None) -> dict:
    """The fast path's latency and the three consumers, through gateway A (`gateway_args`) and, if `compare_args`
    or `compare_source`, gateway B (those flags too; the gateway of the checkout at `compare_source`) in front of the
    same query, and on tansu's coordinator, in rounds whose order
    alternates (A/B comparisons in the same minutes). `pause_query`: the query is stopped while the consumers commit
    (give the gateways a `--view-bound-ms` longer than the round, or they stop answering from views), to tell the
    query's share of the CPU from the rest."""
    from streaming.query import spark_session, start_query, stop_between_batches

    props = _fresh_topics(bootstrap, workdir)
    spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
    query = [start_query(spark, props)]
    gateways = {"A": start_gateway(bootstrap, _topics(props), args=gateway_args, log_path=workdir / "gateway-A.log")}
    if compare_args or compare_source:
        gateways["B"] = start_gateway(bootstrap, _topics(props), args=[*gateway_args, *compare_args],
                                      log_path=workdir / "gateway-B.log", source=compare_source)
    targets = {**{name: g.bootstrap_servers for name, g in gateways.items()}, "tansu": bootstrap}
    processes = {**{f"gateway {name}": g.process.pid for name, g in gateways.items()}, "broker": broker_pid}

    def pause() -> None:
        if pause_query:
            stop_between_batches(query[0])

    def resume() -> None:
        if pause_query and not query[0].isActive:
            query[0] = start_query(spark, props)

    out: dict[str, Any] = {"gateway_args": gateway_args, "compare_args": compare_args,
                           "compare_source": str(compare_source or ""), "pause_query": pause_query,
                           "load_average": {"start": os.getloadavg()}}
    try:
        times: dict[str, dict[str, list[float]]] = {name: {} for name in targets}
        topics = {name: gateway_fast.create_topic(bootstrap) for name in targets}
        for r in range(rounds):
            for name in (list(targets) if r % 2 == 0 else list(reversed(targets))):
                warm = 8.0 if r == 0 and name != "tansu" else 1.0
                got = asyncio.run(gateway_fast.round_trips(targets[name], topics[name], samples, warm_s=warm))
                for kind, values in got.items():
                    times[name].setdefault(kind, []).extend(values)
        out["load_average"]["after_latency"] = os.getloadavg()
        out["latency"] = {name: {kind: percentiles(values) for kind, values in kinds.items()}
                          for name, kinds in times.items()}
        out["latency_ratios"] = {name: gateway_fast.ratios(times[name]) for name in gateways}
        # Each gateway also with KIP-848's consumer protocol ("A consumer", ...), which tansu does not have.
        runs = {**{name: (server, "classic") for name, server in targets.items()},
                **{f"{name} consumer": (gateways[name].bootstrap_servers, "consumer") for name in gateways}}
        three: dict[str, list[dict]] = {name: [] for name in runs}
        for r in range(rounds):
            for name in (list(runs) if r % 2 == 0 else list(reversed(runs))):
                resume()
                server, protocol = runs[name]
                three[name].append(gateway_fast.three_consumers(
                    server, bootstrap, processes=processes, formed_hook=pause if name != "tansu" else None,
                    group_protocol=protocol))
        resume()
        out["load_average"]["end"] = os.getloadavg()
        out["three_consumers"] = three
        medians = {name: statistics.median(x["seconds_to_commit_all"] for x in runs) for name, runs in three.items()}
        out["three_consumers_medians"] = medians
        out["three_consumers_ratios"] = {name: round(medians[name] / medians["tansu"], 2)
                                         for name in three if name != "tansu"}
    finally:
        for gateway in gateways.values():
            gateway.stop()
        query[0].stop()
    return out


def compare_lines(result: dict) -> str:
    """One line per gateway: the three consumers' ratio to tansu, commit-call p50s, and the latency ratios."""
    lines = []
    tansu_runs = result["three_consumers"]["tansu"]
    for name, ratio in result["three_consumers_ratios"].items():
        runs = result["three_consumers"][name]
        line = (
            f"{name}: three consumers committed in {[r['seconds_to_commit_all'] for r in runs]} s, tansu "
            f"{[r['seconds_to_commit_all'] for r in tansu_runs]} s: ratio of medians {ratio}; commit call p50 "
            f"{[r['commit_call']['p50_ms'] for r in runs]} ms p99 {[r['commit_call']['p99_ms'] for r in runs]} ms "
            f"(tansu p50 {[r['commit_call']['p50_ms'] for r in tansu_runs]} p99 "
            f"{[r['commit_call']['p99_ms'] for r in tansu_runs]}); first record after the records were produced "
            f"{[min(c['first_record_s'] for c in r['consumers']) for r in runs]} s (tansu "
            f"{[min(c['first_record_s'] for c in r['consumers']) for r in tansu_runs]}); formed in "
            f"{[r['seconds_to_form'] for r in runs]} s (tansu {[r['seconds_to_form'] for r in tansu_runs]})")
        if name in result["latency"]:
            lat = result["latency"][name]
            line += (f"; lone commit p50 {lat['commit']['p50_ms']} ms p99 {lat['commit']['p99_ms']} ms, heartbeat "
                     f"p50 {lat['heartbeat']['p50_ms']} ms p99 {lat['heartbeat']['p99_ms']} ms; "
                     f"{result['latency_ratios'][name]}")
        lines.append(line)
    tansu = result["latency"]["tansu"]
    lines.append(f"tansu: commit p50 {tansu['commit']['p50_ms']} ms p99 {tansu['commit']['p99_ms']} ms, heartbeat "
                 f"p50 {tansu['heartbeat']['p50_ms']} ms")
    lines.append("load average: " + " / ".join(f"{when} " + ", ".join(f"{v:.2f}" for v in avg)
                                              for when, avg in result["load_average"].items()))
    lines.append(f"uptime at the end: {_uptime()} (a shared machine: compare only within a run)")
    return "\n".join(lines)


def _uptime() -> str:
    import subprocess

    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gateway_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB in the fetched topic")
    parser.add_argument("--rounds", type=int, default=3, help="reads of the topic per reader and path")
    parser.add_argument("--samples", type=int, default=300, help="round trips per request kind and path (core)")
    parser.add_argument("--query-samples", type=int, default=30, help="the same against the real query")
    parser.add_argument("--no-query", action="store_true", help="skip the real coordinator query")
    parser.add_argument("--response-fetch-wait-ms", type=int, default=5,
                        help="the response readers' fetch wait, the same on both paths")
    parser.add_argument("--authorization", choices=("both", "off", "on"), default="both",
                        help="gateways without ACL checks, with them, or both (ratios on/off printed)")
    parser.add_argument("--fast-samples", type=int, default=2000,
                        help="round trips per request kind and target for the fast path's latency")
    parser.add_argument("--liveness-seconds", type=float, default=60.0,
                        help="how long ten idle members heartbeat while their control records are counted")
    parser.add_argument("--fast-only", action="store_true",
                        help="only the fast path's latency and the three consumers, in alternating rounds "
                             "(with --compare-gateway-arg: gateway A against gateway B)")
    parser.add_argument("--fast-rounds", type=int, default=3, help="rounds of each with --fast-only")
    parser.add_argument("--gateway-arg", action="append", default=[],
                        help="an extra `coordinator gateway` flag for both gateways of --fast-only")
    parser.add_argument("--compare-gateway-arg", action="append", default=[],
                        help="with --fast-only: a second gateway B with this flag too (repeatable)")
    parser.add_argument("--compare-source", type=Path, default=None, metavar="DIR",
                        help="with --fast-only, and --speed many: a second gateway B run from the checkout at DIR "
                             "(e.g. `git worktree add DIR main`), same flags: a change against main in one run")
    parser.add_argument("--pause-query", action="store_true",
                        help="with --fast-only: the query stopped while the consumers commit")
    parser.add_argument("--speed", type=lambda v: set(v.split(",")), default=set(), metavar="PARTS",
                        help="issue 36's runs instead, of PARTS among clients,three,many (comma-separated): each "
                             "client library committing every record, three librdkafka consumers, many committers "
                             "through one and two gateway processes; --fast-rounds rounds each")
    parser.add_argument("--records", type=int, default=300, help="records each client commits with --speed clients")
    parser.add_argument("--many-seconds", type=float, default=20.0, help="seconds of committing with --speed many")
    args = parser.parse_args(argv)
    if args.speed:
        return _speed(args)
    if args.fast_only:
        return _fast_only(args)
    modes = ["off", "on"] if args.authorization == "both" else [args.authorization]
    result: dict[str, Any] = {"load_average_before": os.getloadavg(), "authorization": modes,
                              "authorization_goal": "on within 10% of off"}
    broker = start_broker()
    workdir = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    try:
        if "on" in modes:
            grant_bench_acls(broker.bootstrap_servers)
        props = _fresh_topics(broker.bootstrap_servers, workdir)
        gateways = {mode: start_gateway(broker.bootstrap_servers, _gateway_props(props, mode), args=MODES[mode],
                                        log_path=workdir / f"gateway-fetch-{mode}.log") for mode in modes}
        try:
            result["fetch"] = fetch_throughput(broker.bootstrap_servers,
                                               {mode: g.bootstrap_servers for mode, g in gateways.items()},
                                               args.mib, args.rounds)
        finally:
            for gateway in gateways.values():
                gateway.stop()
        wait = args.response_fetch_wait_ms
        result["group_requests"] = {"goal": "overhead p50 <= 2 ms", "response_fetch_wait_ms": wait,
                                    "core": with_core(broker.bootstrap_servers, workdir, wait, args.samples, modes)}
        if not args.no_query:
            result["group_requests"]["query"] = with_query(broker.bootstrap_servers, workdir, wait,
                                                           args.query_samples, modes)
            result["fast_path"] = with_fast_path(broker.bootstrap_servers, workdir, args.fast_samples,
                                                 args.liveness_seconds)
    finally:
        broker.stop()
    result["load_average_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    if "fast_path" in result:
        print(summary_line(result["fast_path"]))
    return 0


def _fast_only(args: argparse.Namespace) -> int:
    broker = start_broker()
    workdir = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    try:
        result = compare_fast_paths(broker.bootstrap_servers, workdir, args.fast_samples, args.fast_rounds,
                                    args.gateway_arg, args.compare_gateway_arg, args.pause_query,
                                    broker.process.pid, args.compare_source)
    finally:
        broker.stop()
    print(json.dumps(result, indent=2))
    print(compare_lines(result))
    return 0


def _speed(args: argparse.Namespace) -> int:
    """Issue 36: each client library committing every record, three librdkafka consumers with both protocols, and
    many members committing as fast as they can through one gateway process and through two, all against tansu's
    own coordinator in the same run, alternating; ends with the three ratio lines."""
    from streaming.query import spark_session, start_query

    broker = start_broker()
    workdir = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    result: dict[str, Any] = {"load_average": {"start": os.getloadavg()}}
    try:
        props = _fresh_topics(broker.bootstrap_servers, workdir)
        spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
        query = start_query(spark, props)
        one = start_gateway(broker.bootstrap_servers, _topics(props), args=args.gateway_arg,
                            log_path=workdir / "gateway-1.log")
        two = start_gateway(broker.bootstrap_servers, _topics(props), args=[*args.gateway_arg, "--processes", "2"],
                            log_path=workdir / "gateway-2.log")
        peer = (start_gateway(broker.bootstrap_servers, _topics(props), args=args.gateway_arg,
                              log_path=workdir / "gateway-B.log", source=args.compare_source)
                if args.compare_source else None)
        processes = {"gateway": one.process.pid, "gateway x2": two.process.pid, "broker": broker.process.pid,
                     **({"gateway B": peer.process.pid} if peer else {})}
        try:
            if "clients" in args.speed:
                result["clients"] = commit_clients.compare(one.bootstrap_servers, broker.bootstrap_servers,
                                                           args.fast_rounds, args.records)
                result["load_average"]["after clients"] = os.getloadavg()
            if "three" in args.speed:
                result["three"] = _three(one.bootstrap_servers, broker.bootstrap_servers, args.fast_rounds,
                                         processes)
                result["load_average"]["after three"] = os.getloadavg()
            if "many" in args.speed:
                targets = {"gateway": one.bootstrap_servers, "gateway x2": two.bootstrap_servers,
                           **({"gateway B": peer.bootstrap_servers} if peer else {}),
                           "tansu": broker.bootstrap_servers}
                runs: dict[str, list[dict]] = {name: [] for name in targets}
                for r in range(args.fast_rounds):
                    for name in (list(targets) if r % 2 == 0 else list(reversed(targets))):
                        runs[name].append(many_committers.many_committers(
                            targets[name], broker.bootstrap_servers, seconds=args.many_seconds,
                            processes=processes))
                result["many"] = runs
                result["load_average"]["after many"] = os.getloadavg()
        finally:
            if peer is not None:
                peer.stop()
            two.stop()
            one.stop()
            query.stop()
    finally:
        broker.stop()
    result["load_average"]["end"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    print(speed_lines(result))
    return 0


def _three(gateway: str, broker: str, rounds: int, processes: dict[str, int]) -> dict[str, Any]:
    """The three consumers' runs per kind; a run whose group did not form in time is kept as its error (told in
    the line, not fatal: the other kinds and the many committers run on)."""
    runs: dict[str, list[dict]] = {"gateway": [], "gateway consumer protocol": [], "tansu": []}
    for r in range(rounds):
        order = list(runs) if r % 2 == 0 else list(reversed(runs))
        for name in order:
            try:
                runs[name].append(gateway_fast.three_consumers(
                    broker if name == "tansu" else gateway, broker, processes=processes,
                    group_protocol="consumer" if name.endswith("protocol") else "classic"))
            except TimeoutError as exc:
                runs[name].append({"failed": f"{str(exc)[:200]} (load {os.getloadavg()[0]:.1f})"})
    return runs


def speed_lines(result: dict[str, Any]) -> str:
    """Issue 36's lines: commit per record, three librdkafka consumers, many committers; and the load averages."""
    lines = []
    if "clients" in result:
        lines.append(commit_clients.line(result["clients"]))
    if "three" in result:
        done = {name: [r["seconds_to_commit_all"] for r in runs if "failed" not in r]
                for name, runs in result["three"].items()}
        medians = {name: statistics.median(times) if times else None for name, times in done.items()}

        def ratio(name: str) -> str:
            if medians[name] is None or medians["tansu"] is None:
                return "none (no run formed its group)"
            return f"{medians[name] / medians['tansu']:.2f}"

        failed = "".join(f"; {name}: {r['failed']}" for name, runs in result["three"].items()
                         for r in runs if "failed" in r)
        lines.append(f"three librdkafka consumers: gateway/tansu = {ratio('gateway')} (classic), "
                     f"{ratio('gateway consumer protocol')} (consumer protocol); seconds to commit all 600: "
                     + ", ".join(f"{name} {times}" for name, times in done.items()) + failed)
    if "many" in result:
        rate = {name: statistics.median(r["commits_per_s"] for r in runs) for name, runs in result["many"].items()}
        cpu = {name: runs[len(runs) // 2]["cpu_cores"] for name, runs in result["many"].items()}
        lines.append(f"many committers: gateway/tansu = {rate['gateway'] / rate['tansu']:.2f} "
                     f"({rate['gateway']:.0f} commits/s), processes 2/1 = {rate['gateway x2'] / rate['gateway']:.2f} "
                     f"(simulated raw-protocol members, 100 in 10 groups; commits/s "
                     + ", ".join(f"{name} {[r['commits_per_s'] for r in runs]}" for name, runs in result["many"].items())
                     + ")")
        if "gateway B" in rate:
            lines.append(f"  gateway B (--compare-source): gateway/tansu = {rate['gateway B'] / rate['tansu']:.2f} "
                         f"({rate['gateway B']:.0f} commits/s); gateway/gateway B = "
                         f"{rate['gateway'] / rate['gateway B']:.2f}")
        lines.append("  cores used while committing (a median run each; spark = the query): "
                     + "; ".join(f"{name}: {cores}" for name, cores in cpu.items()))
    lines.append("load average: " + " / ".join(f"{when} " + ", ".join(f"{v:.2f}" for v in avg)
                                              for when, avg in result["load_average"].items()))
    lines.append(f"uptime at the end: {_uptime()} (a shared machine: compare only within a run)")
    return "\n".join(lines)


def summary_line(fast: dict) -> str:
    """Issue 24's line, then tansu's own coordinator beside it and the three consumers."""
    ratios = fast["latency"]["ratios"]
    ours, tansu = fast["latency"]["gateway"], fast["latency"]["tansu"]
    three = fast["three_consumers_commit_every_record"]
    return "\n".join([
        f"tansu's coordinator (same run): commit p50 {tansu['commit']['p50_ms']} ms "
        f"p99 {tansu['commit']['p99_ms']} ms, heartbeat p50 {tansu['heartbeat']['p50_ms']} ms p99 {tansu['heartbeat']['p99_ms']} ms; through the "
        f"gateway: commit p50 {ours['commit']['p50_ms']} ms p99 {ours['commit']['p99_ms']} ms, heartbeat p50 "
        f"{ours['heartbeat']['p50_ms']} ms p99 {ours['heartbeat']['p99_ms']} ms",
        f"three librdkafka consumers committing every record, 600 records: committed in "
        f"{three['gateway']['seconds_to_commit_all']} s through the gateway, {three['tansu']['seconds_to_commit_all']} "
        f"s on tansu's coordinator (ratio {three['ratio']}); with the group's forming "
        f"{three['gateway']['seconds']} s and {three['tansu']['seconds']} s (ratio {three['ratio_with_forming']}); "
        f"with KIP-848's consumer protocol through the gateway "
        f"{three['gateway_consumer_protocol']['seconds_to_commit_all']} s (ratio to tansu's classic "
        f"{three['consumer_protocol_ratio']}), commit call p50 "
        f"{three['gateway_consumer_protocol']['commit_call']['p50_ms']} ms (classic "
        f"{three['gateway']['commit_call']['p50_ms']} ms, tansu {three['tansu']['commit_call']['p50_ms']} ms); "
        f"uptime {_uptime()}",
        f"gateway latency: commit p50/produce p50 = {ratios['commit_p50_over_produce_p50']}, commit p99/produce p99 = "
        f"{ratios['commit_p99_over_produce_p99']}, heartbeat p50/ApiVersions p50 = "
        f"{ratios['heartbeat_p50_over_api_versions_p50']}, heartbeat p99/ApiVersions p99 = "
        f"{ratios['heartbeat_p99_over_api_versions_p99']}, control records per member-minute = "
        f"{fast['control_records']['control_records_per_member_minute']}"])


if __name__ == "__main__":
    raise SystemExit(main())
