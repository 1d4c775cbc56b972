"""A group's history (generations, members, assignments over time) from the records topic, and its picture.

Every group metadata record the coordinator writes (Kafka's GroupMetadataValue as JSON, docs/wire-format.md)
is a snapshot of the group: generation, protocol, leader, members with their assignments, plus the state it
was in. Read in offset order with their record timestamps, consecutive snapshots that differ make the history.
Kafka's tool cannot show this because `__consumer_offsets` is compacted to the latest value; here it works as
far back as the records topic still holds (compaction drops superseded snapshots, so on a compacted topic the
history is only as long as the segments not yet cleaned).
"""

from __future__ import annotations

import base64
import html
import time
from dataclasses import dataclass
from typing import Iterable

import msgspec
from kafka import KafkaConsumer, TopicPartition

from assignors import consumer_protocol as cp
from schemas.messages import GroupMetadataKey, GroupMetadataRecord
from state.records import decode_key

_GROUP = msgspec.json.Decoder(GroupMetadataRecord)


@dataclass(frozen=True)
class MemberSnapshot:
    member_id: str
    group_instance_id: str | None
    client_id: str
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Snapshot:
    timestamp_ms: int
    generation: int
    state: str
    protocol: str
    leader: str
    members: tuple[MemberSnapshot, ...]

    def same_as(self, other: "Snapshot") -> bool:
        return (self.generation, self.state, self.protocol, self.leader, self.members) == (
            other.generation, other.state, other.protocol, other.leader, other.members
        )


def _assignment(text: str) -> tuple[tuple[str, int], ...]:
    if not text:
        return ()
    try:
        return tuple(sorted(cp.decode_assignment(base64.b64decode(text)).partitions()))
    except (cp.ConsumerProtocolError, ValueError):
        return ()


def snapshot_of(value: GroupMetadataRecord, timestamp_ms: int) -> Snapshot:
    """A group metadata record's value (`state.classic.records.group_record`; `protocol` and `leader` are null while the
    group is Empty)."""
    members = tuple(MemberSnapshot(m.member_id, m.group_instance_id, m.client_id, _assignment(m.assignment))
                    for m in value.members)
    return Snapshot(timestamp_ms, value.generation, value.directory.group_state, value.protocol or "",
                    value.leader or "", members)


def history(records: Iterable[tuple[bytes | None, bytes | None, int]], group_id: str) -> list[Snapshot]:
    """(key, value, timestamp_ms) of the records topic, in log order -> the group's distinct snapshots.
    A tombstone (group deleted or expired) appears as a Dead snapshot with no members."""
    out: list[Snapshot] = []
    for key, value, ts in records:
        try:
            k = decode_key(key)
            if not isinstance(k, GroupMetadataKey) or k.group != group_id:
                continue
            if value is None:
                snap = Snapshot(ts, out[-1].generation if out else 0, "Dead", "", "", ())
            else:
                snap = snapshot_of(_GROUP.decode(value), ts)
        except msgspec.DecodeError:
            continue
        if not out or not snap.same_as(out[-1]):
            out.append(snap)
    return out


def read_records(bootstrap_servers: str, topic: str, timeout_s: float = 30.0, **kafka_config: object):
    """Every record of `topic` up to the high watermark of each partition, in (timestamp, partition, offset)
    order, as (key, value, timestamp_ms)."""
    consumer = KafkaConsumer(**{
        "bootstrap_servers": bootstrap_servers, "group_id": None, "enable_auto_commit": False,
        "fetch_max_wait_ms": 10, "client_id": "groupcoord-admin-history", **kafka_config,
    })
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records = []
        deadline = time.monotonic() + timeout_s
        done: set[TopicPartition] = set()
        while len(done) < len(tps):
            for polled in consumer.poll(timeout_ms=100).values():
                records.extend(polled)
            for tp in tps:
                mark = consumer.highwater(tp)
                if mark is not None and consumer.position(tp) >= mark:
                    done.add(tp)
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {topic} to its end within {timeout_s}s")
        records.sort(key=lambda r: (r.timestamp, r.partition, r.offset))
        return [(r.key, r.value, r.timestamp) for r in records]
    finally:
        consumer.close()


def format_assignment(assignment: Iterable[tuple[str, int]]) -> str:
    """Kafka's `--members --verbose` format: `topic1(0,1), topic2(0)`."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    return ", ".join(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in sorted(by_topic.items())) or "-"


def _lane(m: MemberSnapshot) -> str:
    return m.group_instance_id or m.member_id


def segments(snapshots: list[Snapshot], end_ms: int) -> list[tuple[str, int, int, int, tuple[tuple[str, int], ...]]]:
    """(lane, start_ms, stop_ms, generation, assignment): one span per member and unchanged
    (generation, assignment), so a picture draws each holding once however many snapshots repeat it."""
    out = []
    open_spans: dict[str, tuple[int, int, tuple[tuple[str, int], ...]]] = {}
    for snap in snapshots:
        current = {_lane(m): (snap.generation, m.assignment) for m in snap.members}
        for lane, (start, generation, assignment) in list(open_spans.items()):
            if current.get(lane) != (generation, assignment):
                out.append((lane, start, snap.timestamp_ms, generation, assignment))
                del open_spans[lane]
        for lane, (generation, assignment) in current.items():
            if lane not in open_spans:
                open_spans[lane] = (snap.timestamp_ms, generation, assignment)
    for lane, (start, generation, assignment) in open_spans.items():
        out.append((lane, start, end_ms, generation, assignment))
    return out


def render_png(snapshots: list[Snapshot], group_id: str, path: str) -> None:
    """A timeline: one lane per member, a bar per span it held an assignment in one generation (coloured by
    generation, labelled with its partitions), and a dashed line with the state at each new generation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not snapshots:
        raise ValueError(f"no history for group {group_id}")
    t0 = snapshots[0].timestamp_ms
    end = snapshots[-1].timestamp_ms + max(1000, (snapshots[-1].timestamp_ms - t0) // 10)
    lanes = list(dict.fromkeys(_lane(m) for snap in snapshots for m in snap.members))
    fig, ax = plt.subplots(figsize=(12, 1.6 + 0.5 * max(1, len(lanes))))
    colors = plt.get_cmap("tab10")
    for lane, start, stop, generation, assignment in segments(snapshots, end):
        y = lanes.index(lane)
        left, width = (start - t0) / 1000, (stop - start) / 1000
        ax.barh(y, width, left=left, height=0.6, color=colors(generation % 10), alpha=0.55, edgecolor="black",
                linewidth=0.4)
        text = format_assignment(assignment)
        ax.text(left + 0.01 * (end - t0) / 1000, y, text if len(text) <= 30 else f"{len(assignment)} partitions",
                va="center", fontsize=7, clip_on=True)
    for i, snap in enumerate(snapshots):
        if i == 0 or snap.generation != snapshots[i - 1].generation:
            x = (snap.timestamp_ms - t0) / 1000
            ax.axvline(x, color="grey", linestyle="--", linewidth=0.8)
            ax.text(x, -0.55, f" gen {snap.generation} ({snap.state})", fontsize=7, va="bottom")
    ax.set_yticks(range(len(lanes)), [lane if len(lane) < 32 else lane[:29] + "..." for lane in lanes], fontsize=7)
    ax.set_ylim(len(lanes) - 0.4, -0.9)
    ax.set_xlim(0, (end - t0) / 1000)
    ax.set_xlabel("seconds since the first snapshot")
    ax.set_title(f"consumer group {group_id}: members and assignments by generation")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render_html(snapshots: list[Snapshot], group_id: str, path: str) -> None:
    """The same history as a self-contained HTML table, one row per snapshot and one column per member."""
    lanes = list(dict.fromkeys(_lane(m) for snap in snapshots for m in snap.members))
    t0 = snapshots[0].timestamp_ms if snapshots else 0
    head = "".join(f"<th>{html.escape(lane)}</th>" for lane in lanes)
    rows = []
    for snap in snapshots:
        cells = {_lane(m): format_assignment(m.assignment) for m in snap.members}
        hue = (snap.generation * 47) % 360
        row = "".join(
            f"<td style='background:hsl({hue},60%,85%)'>{html.escape(cells[lane])}</td>" if lane in cells else "<td></td>"
            for lane in lanes
        )
        rows.append(
            f"<tr><td>{(snap.timestamp_ms - t0) / 1000:.3f}</td><td>{snap.generation}</td>"
            f"<td>{html.escape(snap.state)}</td><td>{html.escape(snap.protocol)}</td>{row}</tr>"
        )
    page = (
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(group_id)} history</title>"
        "<style>body{font-family:sans-serif}td,th{border:1px solid #999;padding:2px 6px;font-size:12px}"
        "table{border-collapse:collapse}</style>"
        f"<h1>Consumer group {html.escape(group_id)}</h1>"
        f"<table><tr><th>seconds</th><th>generation</th><th>state</th><th>protocol</th>{head}</tr>"
        + "".join(rows)
        + "</table>"
    )
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
