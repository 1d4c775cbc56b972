"""JSON codecs on the job's own messages (not a test): msgspec against orjson and the stdlib json.

Decoding a request means bytes -> a validated request: msgspec decodes into the typed class (`state.wire`); json
and orjson build a dict that the field-by-field checkers then walk (`state.wire.parse`, the checks the core made
before msgspec). Encoding a response or the stored state: msgspec encodes the Struct, json and orjson the same
value as plain dicts and lists (built beforehand, so their figure leaves out building them). The stored group
state is decoded into the stored layout's classes: by msgspec straight from the bytes, by the others into dicts
that `msgspec.convert` then turns into the classes (the fastest way from a dict to them).

    .venv/bin/python -m bench.micro.codec_bench [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import timeit
from typing import Any, Callable

import msgspec
import orjson

from bench.micro.core_bench import Group
from state.batch import _METADATA
from state.wire import decode_request, encode, join_response, parse
from schemas.messages import HeartbeatResponse, JoinGroupResponseMember, OffsetCommitResponse


def stdlib_dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def per_op_us(fn: Callable[[], Any], repeat: int) -> float:
    number = max(1, int(0.05 / max(timeit.timeit(fn, number=1), 1e-7)))
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def stable_group(members: int) -> tuple[Group, list[str]]:
    group = Group(f"g{members}")
    ids, _, _ = group.stable(members)
    return group, ids


def cases(members_small: int = 10, members_large: int = 100) -> list[tuple[str, str, Any]]:
    """(message kind, direction, value): a raw request to decode, or a response/state Struct to encode."""
    out: list[tuple[str, str, Any]] = []
    small, small_ids = stable_group(members_small)
    large, large_ids = stable_group(members_large)
    heartbeat = small.request("Heartbeat", member_id=small_ids[0], generation_id=1, api_version=4)
    commit = small.request("OffsetCommit", member_id=small_ids[0], generation_id_or_member_epoch=1, topics=[
        {"name": "orders", "partitions": [{"partition_index": 3, "committed_offset": 1234,
                                           "committed_metadata": ""}]}])
    out.append(("heartbeat", "decode", json.dumps(heartbeat).encode()))
    out.append(("heartbeat", "encode", HeartbeatResponse(request_id="17", group_id="g", error_code=0)))
    out.append(("commit", "decode", json.dumps(commit).encode()))
    out.append(("commit", "encode", msgspec.convert({"api": "OffsetCommit", "request_id": "18", "group_id": "g",
                                                     "error_code": 0, "topics": [{"name": "orders", "partitions": [
                                                         {"partition_index": 3, "error_code": 0}]}]},
                                                    OffsetCommitResponse)))
    for group, ids in ((small, small_ids), (large, large_ids)):
        n = len(ids)
        out.append((f"join, {n} members", "decode", json.dumps(group.join(ids[0])).encode()))
        req = decode_request(json.dumps(group.join(ids[0])).encode())
        members = tuple(JoinGroupResponseMember(m, None, req.protocols[0].metadata) for m in ids)
        out.append((f"join, {n} members", "encode", join_response(req, 0, generation_id=2, protocol_type="consumer",
                                                                  protocol_name="range", leader=ids[0],
                                                                  member_id=ids[0], members=members)))
        sync = group.request("SyncGroup", member_id=ids[0], generation_id=1, protocol_type="consumer",
                             protocol_name="range", assignments=[{"member_id": m, "assignment": "AAEAAAAB"}
                                                                 for m in ids])
        out.append((f"leader's sync, {n} members", "decode", json.dumps(sync).encode()))
        out.append((f"stored group state, {n} members", "decode", group.state.metadata))
        out.append((f"stored group state, {n} members", "encode", _METADATA.decode(group.state.metadata)))
    return out


def codecs(direction: str, value: Any, kind: str) -> dict[str, Callable[[], Any]]:
    if direction == "encode":
        plain = msgspec.to_builtins(value)
        return {"json": lambda: stdlib_dumps(plain), "orjson": lambda: orjson.dumps(plain),
                "msgspec": lambda: encode(value)}
    if kind.startswith("stored"):
        doc = type(_METADATA.decode(value))
        return {"json": lambda: msgspec.convert(json.loads(value), doc),
                "orjson": lambda: msgspec.convert(orjson.loads(value), doc),
                "msgspec": lambda: _METADATA.decode(value)}
    return {"json": lambda: parse(json.loads(value)), "orjson": lambda: parse(orjson.loads(value)),
            "msgspec": lambda: decode_request(value)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(f"{'message':<34}{'':>7}{'json us':>10}{'orjson us':>11}{'msgspec us':>12}{'json/msgspec':>14}"
          f"{'orjson/msgspec':>16}")
    for kind, direction, value in cases():
        times = {name: per_op_us(fn, args.repeat) for name, fn in codecs(direction, value, kind).items()}
        print(f"{kind:<34}{direction:>7}{times['json']:>10.2f}{times['orjson']:>11.2f}{times['msgspec']:>12.2f}"
              f"{times['json'] / times['msgspec']:>13.1f}x{times['orjson'] / times['msgspec']:>15.1f}x")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
