"""Micro-benchmark of the coordinator core (not a test): requests per second through `step_group`.

Measures what the streaming job pays per micro-batch: heartbeats and offset commits in a Stable group (one
request per call, and batches as a micro-batch would deliver them), and a full rebalance of a 1,000-member group
(everyone re-joins, the join phase completes, everyone syncs). Every call decodes and re-encodes the group's
stored state, as in the job, so per-call cost grows with group size.

    .venv/bin/python -m bench.micro.core_bench [--members 100] [--batch 100] [--rebalance-members 1000]
"""

from __future__ import annotations

import argparse
import json
import time

from assignors.consumer_protocol import Subscription, encode_subscription
from state.batch import StoredGroup, step_group
from state.config import CoordinatorConfig

CONFIG = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
METADATA = __import__("base64").b64encode(encode_subscription(Subscription(("orders",)))).decode()


class Group:
    def __init__(self, group_id: str = "bench") -> None:
        self.group_id = group_id
        self.state: StoredGroup | None = None
        self.now = 0
        self.rid = 0

    def call(self, requests: list[dict]) -> list[dict]:
        raw = [json.dumps(r).encode() for r in requests]
        result = step_group(self.group_id, self.state, raw, self.now, CONFIG)
        self.state = result.stored(self.state)
        return [json.loads(r) for r in result.responses]

    def request(self, api: str, **fields) -> dict:
        self.rid += 1
        return {"api": api, "request_id": str(self.rid), "group_id": self.group_id, **fields}

    def join(self, member_id: str) -> dict:
        return self.request("JoinGroup", member_id=member_id, session_timeout_ms=600_000,
                            rebalance_timeout_ms=600_000, protocol_type="consumer", client_id="bench",
                            protocols=[{"name": "range", "metadata": METADATA}])

    def stable(self, n: int) -> tuple[list[str], float, float]:
        """n members joined and synced; returns (member ids leader first, wall and CPU seconds from the join
        batch to the answered sync batch)."""
        ids = [r["member_id"] for r in self.call([self.join("") for _ in range(n)])]
        start, cpu = time.perf_counter(), time.process_time()
        responses = self.call([self.join(m) for m in ids])
        responses += self.call([])
        leader = responses[0]["leader"]
        generation = responses[0]["generation_id"]
        ordered = [leader] + [m for m in ids if m != leader]
        syncs = [self.request("SyncGroup", member_id=m, generation_id=generation, protocol_type="consumer",
                              protocol_name="range", assignments=[]) for m in ordered[1:]]
        syncs.append(self.request("SyncGroup", member_id=leader, generation_id=generation, protocol_type="consumer",
                                  protocol_name="range",
                                  assignments=[{"member_id": m, "assignment": ""} for m in ordered]))
        answered = self.call(syncs)
        elapsed, used = time.perf_counter() - start, time.process_time() - cpu
        if len(answered) != n or {r["error_code"] for r in answered} != {0}:
            raise RuntimeError(f"rebalance did not complete: {answered[:1]}")
        return ordered, elapsed, used


def rate(group: Group, make, total: int, batch: int) -> str:
    """Requests per second by wall clock and by this process's CPU time (the machine may be shared)."""
    start, cpu = time.perf_counter(), time.process_time()
    done = 0
    while done < total:
        group.now += 1
        responses = group.call([make(i) for i in range(done, min(done + batch, total))])
        if any(r["error_code"] != 0 for r in responses):
            raise RuntimeError(f"a request failed: {responses[:1]}")
        done += batch
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    return f"{total / wall:>9,.0f} wall  {total / used:>9,.0f} cpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=100, help="members of the Stable group")
    parser.add_argument("--batch", type=int, default=100, help="requests per step_group call in batched runs")
    parser.add_argument("--rebalance-members", type=int, default=1000)
    args = parser.parse_args()

    group = Group()
    ids, _, _ = group.stable(args.members)
    heartbeat = lambda i: group.request("Heartbeat", member_id=ids[i % len(ids)], generation_id=1)  # noqa: E731
    commit = lambda i: group.request(  # noqa: E731
        "OffsetCommit", member_id=ids[i % len(ids)], generation_id_or_member_epoch=1,
        topics=[{"name": "orders", "partitions": [{"partition_index": i % 64, "committed_offset": i}]}])
    print(f"group of {args.members} members, stored state {len(group.state.metadata):,} bytes")
    print(f"  heartbeats/s, 1 per call:   {rate(group, heartbeat, 2_000, 1)}")
    print(f"  heartbeats/s, {args.batch:>3} per call: {rate(group, heartbeat, 20_000, args.batch)}")
    print(f"  commits/s,    1 per call:   {rate(group, commit, 2_000, 1)}")
    print(f"  commits/s,    {args.batch:>3} per call: {rate(group, commit, 20_000, args.batch)}")

    big = Group("big")
    n = args.rebalance_members
    _, first, first_cpu = big.stable(n)
    print(f"rebalance of {n} members (stored state {len(big.state.metadata):,} bytes)")
    print(f"  first rebalance (join batch, completion, sync batch): {first * 1000:,.0f} ms wall, "
          f"{first_cpu * 1000:,.0f} ms cpu, {2 * n / first:,.0f} requests/s")
    start, cpu = time.perf_counter(), time.process_time()
    leader_rejoin = big.call([big.join(next(iter(json.loads(big.state.metadata)["group"]["members"]))[0])])
    if leader_rejoin:
        raise RuntimeError(f"the leader's re-join was answered before the others joined: {leader_rejoin[:1]}")
    members = [m[0] for m in json.loads(big.state.metadata)["group"]["members"]]
    responses = big.call([big.join(m) for m in members[1:]])
    if len(responses) != n:
        raise RuntimeError(f"{len(responses)} JoinGroup answers for {n} members")
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    print(f"  rebalance by leader re-join, then everyone re-joins in one batch: {elapsed * 1000:,.0f} ms wall, "
          f"{used * 1000:,.0f} ms cpu")


if __name__ == "__main__":
    main()
