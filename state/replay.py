"""`python -m state.replay`: run the coordinator over a recorded stream of requests, without Spark or Kafka.

Input, one JSON object per line (stdin or a file), in time order:
    {"at_ms": N, "request": {...}}      a request arriving at N (as the JSON object a client sends)
    {"at_ms": N, "raw": "...", "key": "..."}   the exact record value (and optional key) as found in a dump
    {"at_ms": N}                        time passes to N, nothing arrives
Output, one JSON line per event, each with the `at_ms` it happened at:
    {"at_ms": N, "response": {...}}     {"at_ms": N, "record": {"key": {...}, "value": {...}|null}} (--records)
    {"at_ms": N, "dead_letter": {"reason": "...", "request": "..."}}
Timers fire at their own deadlines, as the streaming job calls a group back at its next deadline, so a quiet
stretch between two lines shows every expiry it contains, at the time it happened.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Iterator

from state.batch import StoredGroup, route, step_group
from state.config import CoordinatorConfig
from state.views.directory import GroupDirectory


class ReplayError(Exception):
    """The input itself is wrong (not the requests in it): bad line, time going back."""


class Replayer:
    """Every group seen so far (stored state and next deadline), plus the directory for ListGroups."""

    def __init__(self, config: CoordinatorConfig, with_records: bool, out: IO[str]) -> None:
        self.config = config
        self.with_records = with_records
        self.out = out
        self.states: dict[str, StoredGroup] = {}
        self.deadlines: dict[str, int] = {}
        self.directory = GroupDirectory()
        self.now_ms: int | None = None

    def advance(self, at_ms: int) -> None:
        if self.now_ms is not None and at_ms < self.now_ms:
            raise ReplayError(f"time goes back: {at_ms} < {self.now_ms}")
        while True:
            due = min(((d, g) for g, d in self.deadlines.items() if d <= at_ms), default=None)
            if due is None:
                break
            deadline, group_id = due
            self.now_ms = deadline
            self._step(group_id, [], deadline)
        self.now_ms = at_ms

    def arrive(self, key: bytes | None, value: bytes) -> None:
        if self.now_ms is None:
            raise ReplayError("a request arrives before any time: advance to its time first")
        r = route(key, value)
        if r.kind == "group" and r.group_id is not None:
            self._step(r.group_id, [value], self.now_ms)
        elif r.kind == "directory":
            self._emit({"response": json.loads(self.directory.answer(value))})
        else:
            self._emit({"dead_letter": {"reason": r.reason, "request": value.decode("utf-8", "replace")}})
            if r.response is not None:
                self._emit({"response": json.loads(r.response)})

    def _step(self, group_id: str, requests: list[bytes], now_ms: int) -> None:
        before = self.states.get(group_id)
        result = step_group(group_id, before, requests, now_ms, self.config)
        stored = result.stored(before)
        if stored is None:
            self.states.pop(group_id, None)
        else:
            self.states[group_id] = stored
        if result.next_deadline_ms is None:
            self.deadlines.pop(group_id, None)
        else:
            self.deadlines[group_id] = result.next_deadline_ms
        for index, reason in result.dead_letters:
            self._emit({"dead_letter": {"reason": reason, "request": requests[index].decode("utf-8", "replace")}})
        for response in result.responses:
            self._emit({"response": json.loads(response)})
        for key, value in result.records:
            self.directory.apply(key, value)
            if self.with_records:
                self._emit({"record": {"key": json.loads(key), "value": None if value is None else json.loads(value)}})

    def _emit(self, event: dict) -> None:
        self.out.write(json.dumps({"at_ms": self.now_ms, **event}, separators=(",", ":")) + "\n")


def events(lines: Iterator[str]) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(at_ms, key, value) per input line; value None = time passes only."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            at_ms = event["at_ms"]
            if not isinstance(at_ms, int) or isinstance(at_ms, bool):
                raise TypeError("at_ms is not an integer")
        except (ValueError, KeyError, TypeError) as exc:
            raise ReplayError(f"line {number}: {exc}") from None
        key = event.get("key")
        key_bytes = key.encode() if isinstance(key, str) else None
        if "raw" in event:
            yield at_ms, key_bytes, str(event["raw"]).encode("utf-8", "surrogatepass")
        elif "request" in event:
            request = event["request"]
            group_id = request.get("group_id") if isinstance(request, dict) else None
            yield at_ms, key_bytes or (group_id.encode() if isinstance(group_id, str) else None), \
                json.dumps(request).encode()
        else:
            yield at_ms, None, None


def read_config(pairs: list[str], files: list[str]) -> CoordinatorConfig:
    props: dict[str, str] = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(("#", "!")) and "=" in line:
                    k, v = line.split("=", 1)
                    props[k.strip()] = v.strip()
    for pair in pairs:
        if "=" not in pair:
            raise ReplayError(f"--config {pair!r}: expected key=value")
        k, v = pair.split("=", 1)
        props[k.strip()] = v.strip()
    try:
        return CoordinatorConfig.from_properties(props)
    except ValueError as exc:
        raise ReplayError(f"bad configuration value: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m state.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", help="JSON lines file (default: stdin)")
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="a coordinator setting, Kafka's key (group.initial.rebalance.delay.ms=0)")
    parser.add_argument("--config-file", action="append", default=[], metavar="PATH",
                        help="a properties file of settings (--config wins)")
    parser.add_argument("--records", action="store_true", help="also print the records-topic records")
    args = parser.parse_args(argv)
    try:
        replayer = Replayer(read_config(args.config, args.config_file), args.records, sys.stdout)
        source = open(args.input, encoding="utf-8") if args.input else sys.stdin
        with source:
            for at_ms, key, value in events(iter(source)):
                replayer.advance(at_ms)
                if value is not None:
                    replayer.arrive(key, value)
    except (ReplayError, OSError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
