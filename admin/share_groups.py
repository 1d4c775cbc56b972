"""`groupcoord-share-groups`: the `kafka-share-groups.sh` of this system (Kafka's ShareGroupCommand).

List share groups, describe their members, state and offsets (the share-partition start offset and the lag:
log end - start offset - records already delivered past it), reset the offsets of an empty group, delete offsets
and groups. Options, columns and messages are Kafka's. Group facts come from the coordinator over its control topic
(ListGroups of type share, ShareGroupDescribe, DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets, DeleteGroups), or with `--checkpoint` from a stopped query's state (`admin.offline`, the
core's own handlers over it); log offsets from the brokers (`admin.groups.LogOffsets`). A checkpoint also shows
each share-partition's durable state batch by batch (`--describe --state-batches`), which no Kafka request asks
for.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Sequence, TextIO

from admin.cli import CommandError, Output, command_config
from admin.groups import ADMIN_KEY, LogOffsets, UnknownLogOffsets
from admin.reset import ResetError, datetime_ms
from client.errors import GroupError, RequestTimeoutError, for_code
from client.transport import DEFAULT_CONTROL_TOPIC, DEFAULT_RESPONSE_TOPIC, KafkaTransport, Transport

Json = dict[str, Any]
SHARE_STATES = ("Empty", "Stable", "Dead")


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    assignment: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    members: tuple[ShareMember, ...]


class ShareAdmin:
    """The coordinator side, one request per call; errors raised as GroupError with Kafka's code."""

    def __init__(self, transport: Transport, timeout_s: float = 30.0) -> None:
        self._transport = transport
        self._timeout_s = timeout_s
        self._ids = 0

    def _call(self, key: str, body: Json) -> Json:
        self._ids += 1
        return self._transport.request(key, {"request_id": f"share-admin-{self._ids}", **body}, self._timeout_s,
                                       attempts=2)

    def list_groups(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group, sorted."""
        r = self._call(ADMIN_KEY, {"api": "ListGroups", "types_filter": ["share"]})
        if r.get("error_code"):
            raise GroupError(for_code(r["error_code"]), "ListGroups")
        return sorted((g["group_id"], g.get("group_state") or "") for g in r.get("groups") or [])

    def describe(self, group_id: str) -> ShareGroupDescription:
        """Dead when there is no share group of that id (GROUP_ID_NOT_FOUND)."""
        r = self._call(group_id, {"api": "ShareGroupDescribe", "group_id": group_id})
        code = r.get("error_code")
        if code == 69:
            return ShareGroupDescription(group_id, "Dead", 0, 0, ())
        if code:
            raise GroupError(for_code(code), "ShareGroupDescribe", r.get("error_message") or "")
        members = tuple(ShareMember(
            m["member_id"], m.get("client_id") or "", m.get("client_host") or "", m.get("member_epoch", 0),
            tuple(sorted((t["topic_name"], p) for t in m["assignment"]["topic_partitions"] for p in t["partitions"])))
            for m in r.get("members") or [])
        return ShareGroupDescription(group_id, r.get("group_state") or "Dead", r.get("group_epoch", 0),
                                     r.get("assignment_epoch", 0), members)

    def offsets(self, group_id: str) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (start offset, delivery-complete count) of every initialised share-partition."""
        r = self._call(group_id, {"api": "DescribeShareGroupOffsets", "group_id": group_id, "topics": None})
        if r.get("error_code"):
            raise GroupError(for_code(r["error_code"]), "DescribeShareGroupOffsets", r.get("error_message") or "")
        return {(t["topic_name"], p["partition_index"]): (p["start_offset"], p.get("delivery_complete_count", -1))
                for t in r.get("topics") or [] for p in t["partitions"]}

    def alter(self, group_id: str, offsets: dict[tuple[str, int], int]) -> Json:
        topics: dict[str, list[Json]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append({"partition_index": partition, "start_offset": offset})
        return self._call(group_id, {"api": "AlterShareGroupOffsets", "group_id": group_id, "topics": [
            {"topic_name": t, "partitions": parts} for t, parts in topics.items()]})

    def delete_offsets(self, group_id: str, topics: Sequence[str]) -> Json:
        return self._call(group_id, {"api": "DeleteShareGroupOffsets", "group_id": group_id,
                                     "topics": [{"topic_name": t} for t in topics]})

    def delete(self, group_id: str) -> int:
        return int(self._call(group_id, {"api": "DeleteGroups", "group_id": group_id}).get("error_code", 0))


def lag(log_end: int | None, start: int, delivered: int) -> int | None:
    """Kafka's share-partition lag: the records from the start offset to the log end not delivered yet."""
    if log_end is None or start < 0 or delivered < 0:
        return None
    return max(log_end - start - delivered, 0)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="groupcoord-share-groups", description=(
        "List, describe, delete share groups and reset their offsets, kept by the Spark group coordinator (the "
        "kafka-share-groups.sh of this system)."))
    p.add_argument("--bootstrap-server", help="Kafka brokers: host:port[,host:port] (required unless --checkpoint)")
    p.add_argument("--checkpoint", metavar="PATH", help="read the share groups from a stopped query's checkpoint "
                   "instead of asking the coordinator: --list and --describe only; LAG only with --bootstrap-server")
    p.add_argument("--requests-topic", default=DEFAULT_CONTROL_TOPIC, help="the coordinator's control topic")
    p.add_argument("--responses-topic", default=DEFAULT_RESPONSE_TOPIC, help="the coordinator's response topic")
    p.add_argument("--timeout", type=int, default=30000, help="ms to wait for each coordinator answer")
    p.add_argument("--command-config", help="a properties file of settings for the tool's Kafka clients")
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list all share groups")
    actions.add_argument("--describe", action="store_true", help="describe share group(s)")
    actions.add_argument("--delete", action="store_true", help="delete share group(s) with no active members")
    actions.add_argument("--delete-offsets", action="store_true", help="delete a share group's offsets of --topic")
    actions.add_argument("--reset-offsets", action="store_true", help="reset a share group's offsets (Empty only)")
    p.add_argument("--group", action="append", default=[], help="share group id (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="apply to all share groups")
    p.add_argument("--offsets", action="store_true", help="with --describe: offsets and lag (the default)")
    p.add_argument("--members", action="store_true", help="with --describe: the members")
    p.add_argument("--verbose", action="store_true", help="with --describe: more columns")
    p.add_argument("--state-batches", action="store_true", help="with --describe --checkpoint: each share-partition's "
                   "durable state (state epoch, start offset, the gateway holding it) and its in-flight batches "
                   "(delivery state and count), as the share coordinator's state holds them")
    p.add_argument("--state", nargs="?", const="", metavar="STATES", help="with --list: filter by states; with "
                   "--describe: the group's state")
    p.add_argument("--topic", action="append", default=[], help="topic or topic:0,1 (repeatable)")
    p.add_argument("--all-topics", action="store_true", help="with --reset-offsets: every topic of the group")
    spec = p.add_mutually_exclusive_group()
    spec.add_argument("--to-earliest", action="store_true")
    spec.add_argument("--to-latest", action="store_true")
    spec.add_argument("--to-datetime", help="YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    mode.add_argument("--execute", action="store_true", help="reset the offsets")
    return p


def main(argv: Sequence[str] | None = None, transport: Transport | None = None,
         log_offsets: LogOffsets | UnknownLogOffsets | None = None,
         out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    args = build_parser().parse_args(argv)
    o = Output(out, err, False)
    own_transport, own_offsets = transport is None, log_offsets is None
    try:
        _check(args)
        settings = command_config(args.command_config) if args.command_config else {}
        if transport is None and args.checkpoint:
            from admin.offline import CheckpointTransport

            transport = CheckpointTransport.read(args.checkpoint, None if args.list or args.all_groups else args.group)
        transport = transport or KafkaTransport(args.bootstrap_server, args.requests_topic, args.responses_topic,
                                                **{"client_id": "groupcoord-share-admin", **settings})
        admin = ShareAdmin(transport, args.timeout / 1000)
        if args.list:
            return _list(admin, args.state, o)
        groups = [g for g, _ in admin.list_groups()] if args.all_groups else args.group
        if args.delete:
            return _delete(admin, groups, o)
        if args.delete_offsets:
            return _delete_offsets(admin, groups[0], args.topic, o)
        log_offsets = log_offsets or (UnknownLogOffsets() if args.bootstrap_server is None
                                      else LogOffsets(args.bootstrap_server, **settings))
        if args.describe and args.state_batches:
            return _state_batches(transport, groups, o)
        if args.describe:
            return _describe(args, admin, log_offsets, groups, o)
        return _reset(args, admin, log_offsets, groups[0], o)
    except (CommandError, ResetError, GroupError, RequestTimeoutError, TimeoutError) as exc:
        err.write(f"\nError: {exc}\n")
        return 1
    finally:
        if own_transport and transport is not None:
            transport.close()
        if own_offsets and log_offsets is not None:
            log_offsets.close()


def _check(args: argparse.Namespace) -> None:
    """Kafka's ShareGroupCommandOptions.checkArgs, in its words where it has them."""
    if args.checkpoint is None and args.bootstrap_server is None:
        raise CommandError("Missing required argument \"[bootstrap-server]\"")
    if args.checkpoint is not None and not (args.list or args.describe):
        raise CommandError("Option --checkpoint reads a stopped query's state: it takes only --list or --describe")
    if args.state_batches and not (args.describe and args.checkpoint is not None):
        raise CommandError("Option [state-batches] reads a stopped query's state: it takes [describe] and "
                           "[checkpoint]")
    if (args.describe or args.delete) and not (args.group or args.all_groups):
        raise CommandError("Option [describe] takes one of these options: [all-groups], [group]" if args.describe
                           else "Option [delete] takes one of these options: [all-groups], [group]")
    if (args.reset_offsets or args.delete_offsets) and len(args.group) != 1:
        raise CommandError("Option --group must be given exactly one group")
    if args.delete_offsets and not args.topic:
        raise CommandError("Option [delete-offsets] takes the following options: [topic], [group]")
    if args.reset_offsets:
        if not (args.topic or args.all_topics):
            raise CommandError("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
        if not (args.to_earliest or args.to_latest or args.to_datetime):
            raise CommandError("Option [reset-offsets] takes one of these options: [to-datetime], [to-earliest], "
                               "[to-latest]")
        if args.to_datetime:
            datetime_ms(args.to_datetime)
    if args.state and args.describe:
        raise CommandError("Option [describe] does not take a value for [state]")


def _list(admin: ShareAdmin, states: str | None, o: Output) -> int:
    groups = admin.list_groups()
    if states is None:
        for group_id, _ in groups:
            o.out.write(group_id + "\n")
        return 0
    wanted = {s.strip().lower() for s in states.split(",") if s.strip()}
    unknown = wanted - {s.lower() for s in SHARE_STATES}
    if unknown:
        raise CommandError(f"Invalid state(s): {', '.join(sorted(unknown))}")
    rows = [(g, s) for g, s in groups if not wanted or s.lower() in wanted]
    width = max([15] + [len(g) for g, _ in rows])
    o.out.write(f"{'GROUP'.ljust(width)} STATE\n")
    for g, s in rows:
        o.out.write(f"{g.ljust(width)} {s}\n")
    return 0


def _state_message(desc: ShareGroupDescription, o: Output) -> bool:
    """Kafka's maybePrintEmptyGroupState: whether the group exists."""
    if desc.state == "Dead":
        o.err.write(f"\nError: Share group '{desc.group_id}' does not exist.\n")
        return False
    if desc.state == "Empty":
        o.err.write(f"\nShare group '{desc.group_id}' has no active members.\n")
    return True


def _describe(args: argparse.Namespace, admin: ShareAdmin, log_offsets: LogOffsets | UnknownLogOffsets,
              groups: list[str],
              o: Output) -> int:
    status = 0
    for group_id in groups:
        desc = admin.describe(group_id)
        if args.members:
            if not _state_message(desc, o):
                status = 1
                continue
            if not desc.members:
                continue
            columns = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
            columns += ["MEMBER-EPOCH", "ASSIGNMENT"] if args.verbose else ["ASSIGNMENT"]
            rows = []
            for m in sorted(desc.members, key=lambda m: m.member_id):
                row: list[Any] = [group_id, m.member_id, m.client_host, m.client_id, len(m.assignment)]
                row += [m.member_epoch] if args.verbose else []
                rows.append(row + [_assignment(m.assignment)])
            o.table(columns, rows, {c: w for c, w in (("#PARTITIONS", 12), ("MEMBER-EPOCH", 13)) if c in columns})
        elif args.state is not None:
            if not _state_message(desc, o):
                status = 1
                continue
            coordinator = (f"checkpoint {args.checkpoint}" if args.checkpoint
                           else f"{args.bootstrap_server}  ({args.requests_topic})")
            if args.verbose:
                o.table(["GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"],
                        [(group_id, coordinator, desc.state, desc.group_epoch, desc.assignment_epoch,
                          len(desc.members))], {"STATE": 15, "GROUP-EPOCH": 12, "ASSIGNMENT-EPOCH": 17})
            else:
                o.table(["GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"],
                        [(group_id, coordinator, desc.state, len(desc.members))], {"STATE": 15})
        else:
            if desc.state == "Dead":
                o.err.write(f"\nError: Share group '{group_id}' does not exist.\n")
                status = 1
                continue
            offsets = admin.offsets(group_id)
            if not offsets:
                o.out.write(f"\nShare group '{group_id}' has no offset information.\n")
                continue
            ends = log_offsets.log_end(sorted(offsets))
            columns = ["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if args.verbose else [])
            columns += ["START-OFFSET", "LAG"]
            rows = []
            for (topic, partition), (start, delivered) in sorted(offsets.items()):
                row = [group_id, topic, partition] + ([None] if args.verbose else [])
                rows.append(row + [start if start >= 0 else None,
                                   lag(ends.get((topic, partition)), start, delivered)])
            o.table(columns, rows, {c: w for c, w in (("PARTITION", 10), ("LEADER-EPOCH", 13), ("START-OFFSET", 13))
                                    if c in columns})
    return status


def _state_batches(checkpoint: Any, groups: list[str], o: Output) -> int:
    """Each share-partition's durable state, one row per in-flight batch (one row of `-` when it has none): what
    Kafka's share coordinator keeps in `__share_group_state` and `kafka-dump-log.sh --share-group-state-decoder`
    shows there."""
    status = 0
    columns = ["GROUP", "TOPIC", "PARTITION", "STATE-EPOCH", "START-OFFSET", "HOLDER", "FIRST-OFFSET", "LAST-OFFSET",
               "DELIVERY-STATE", "DELIVERY-COUNT"]
    for group_id in groups:
        states = checkpoint.share_partition_states(group_id)
        if states is None:
            o.err.write(f"\nError: Share group '{group_id}' does not exist.\n")
            status = 1
            continue
        if not states:
            o.out.write(f"\nShare group '{group_id}' has no share-partition state.\n")
            continue
        rows: list[list[Any]] = []
        for sp in states:
            head = [group_id, sp.topic, sp.partition, sp.state_epoch, sp.start_offset if sp.start_offset >= 0 else None,
                    sp.holder]
            rows += [head + [b.first, b.last, b.state.name, b.delivery_count] for b in sp.batches] or [
                head + [None] * 4]
        o.table(columns, rows, {"PARTITION": 10, "START-OFFSET": 13})
    return status


def _assignment(partitions: tuple[tuple[str, int], ...]) -> str:
    """Kafka's getAssignmentString: topic:p,p;topic:p."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in partitions:
        by_topic.setdefault(topic, []).append(p)
    return ";".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items()))


def _delete(admin: ShareAdmin, groups: list[str], o: Output) -> int:
    """Kafka's deleteShareGroups: groups that are not share groups are refused up front, the rest deleted."""
    share = dict(admin.list_groups())
    failed: dict[str, str] = {}
    done: list[str] = []
    for group_id in dict.fromkeys(groups):
        if group_id not in share:
            failed[group_id] = f"Group '{group_id}' is not a share group."
            continue
        code = admin.delete(group_id)
        if code:
            failed[group_id] = for_code(code).description
        else:
            done.append(group_id)
    if not failed:
        o.out.write(f"Deletion of requested share groups ({', '.join(repr(g) for g in done)}) was successful.\n")
        return 0
    o.out.write("Deletion of some share groups failed:\n")
    for group_id, error in failed.items():
        o.out.write(f"* Group '{group_id}' could not be deleted due to: {error}\n")
    if done:
        o.out.write(f"\nThese share groups were deleted successfully: {', '.join(repr(g) for g in done)}\n")
    return 1


def _delete_offsets(admin: ShareAdmin, group_id: str, topics: list[str], o: Output) -> int:
    r = admin.delete_offsets(group_id, [t.split(":")[0] for t in topics])
    code = r.get("error_code") or 0
    if code:
        o.err.write(f"\nError: {r.get('error_message') or for_code(code).description}\n")
        return 1
    results = {t["topic_name"]: t for t in r.get("responses") or []}
    width = max([15] + [len(t) for t in results])
    o.out.write(f"\n{'TOPIC'.ljust(width)} STATUS")
    for topic, t in sorted(results.items()):
        status = "Successful" if not t.get("error_code") else f"Error: {t.get('error_message')}"
        o.out.write(f"\n{topic.ljust(width)} {status}")
    o.out.write("\n")
    return 0 if all(not t.get("error_code") for t in results.values()) else 1


def _reset(args: argparse.Namespace, admin: ShareAdmin, log_offsets: LogOffsets, group_id: str, o: Output) -> int:
    """Kafka's resetOffsets: Empty (or missing) groups only, even in a dry run; the new start offsets printed."""
    desc = admin.describe(group_id)
    if desc.state not in ("Empty", "Dead"):
        raise CommandError(f"Share group '{group_id}' is not empty.")
    if args.all_topics:
        partitions = sorted(admin.offsets(group_id))
    else:
        partitions = []
        for spec in args.topic:
            topic, _, parts = spec.partition(":")
            partitions += [(topic, int(p)) for p in parts.split(",")] if parts else [
                (topic, p) for p in log_offsets.partitions(topic)]
    if args.to_earliest:
        new = log_offsets.earliest(partitions)
    elif args.to_latest:
        new = log_offsets.log_end(partitions)
    else:
        found = log_offsets.for_time(partitions, datetime_ms(args.to_datetime))
        ends = log_offsets.log_end(partitions)
        new = {tp: (offset if offset is not None else ends[tp]) for tp, offset in found.items()}
    if args.execute:
        r = admin.alter(group_id, new)
        if r.get("error_code"):
            raise CommandError(r.get("error_message") or for_code(r["error_code"]).description)
    o.table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
            [(group_id, t, p, off) for (t, p), off in sorted(new.items())], {"PARTITION": 10, "NEW-OFFSET": 13})
    return 0


if __name__ == "__main__":
    sys.exit(main())
