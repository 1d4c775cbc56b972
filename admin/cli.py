"""`groupcoord-consumer-groups`: Kafka's `kafka-consumer-groups.sh` for groups kept by this project's coordinator.

Options, column names, messages and the Empty-only rule for resets are Kafka's (`ConsumerGroupCommand`,
`ConsumerGroupCommandOptions`), so operators and their scripts carry over; the reset specifications and
CSV plans are in `admin.reset`. Added: `--output json` for scripts, and `--history` (with
`--picture FILE.png|FILE.html`) for a group's generations over time.

Structure: argument parsing, then one function per command that gathers data through `admin.groups` and returns
rows; printing is the only place that knows about widths, `-` for missing values, stdout and stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence, TextIO

from admin import history as hist
from admin.groups import GroupAdmin, GroupDescription, LogOffsets, UnknownLogOffsets
from admin.reset import ResetError, datetime_ms, duration_ms, new_offsets, read_plan, write_plan
from client.errors import GroupError, RequestTimeoutError, for_code
from client.transport import DEFAULT_CONTROL_TOPIC, DEFAULT_RESPONSE_TOPIC, KafkaTransport, Transport
from kafka import KafkaConsumer, KafkaProducer
from state.config import kafka_python_settings, read_properties
from streaming.recovery.checkpoint import CheckpointError

DEFAULT_RECORDS_TOPIC = "group-coordinator-records"
REBALANCING = {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}

OFFSET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                  "CLIENT-ID")
STATE_COLUMNS = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
RESET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
HISTORY_COLUMNS = ("TIME", "GENERATION", "STATE", "PROTOCOL", "LEADER", "CONSUMER-ID", "GROUP-INSTANCE-ID",
                   "CLIENT-ID", "ASSIGNMENT")


class CommandError(Exception):
    """Printed as Kafka's tool prints errors (`Error: ...` on stderr), exit code 1."""


@dataclass
class Output:
    out: TextIO
    err: TextIO
    json: bool

    def table(self, columns: Sequence[str], rows: list[Sequence[Any]], fixed: dict[str, int] | None = None) -> None:
        """Kafka's layout: left-aligned columns, each as wide as its widest cell (or Kafka's fixed width),
        one space apart, a blank line before the header; None prints as `-`."""
        if self.json:
            return
        cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        for name, width in (fixed or {}).items():
            i = columns.index(name)
            widths[i] = max(widths[i], width)
        self.out.write("\n")
        for row in [list(columns)] + cells:
            line = " ".join(v.ljust(widths[i]) if i < len(row) - 1 else v for i, v in enumerate(row))
            self.out.write(line.rstrip() + "\n")

    def records(self, columns: Sequence[str], rows: list[Sequence[Any]]) -> None:
        if self.json:
            keys = [c.lower().replace("-", "_").replace("#", "num_").replace(" (id)", "") for c in columns]
            json.dump([dict(zip(keys, row)) for row in rows], self.out, indent=2)
            self.out.write("\n")

    def warn(self, text: str) -> None:
        self.err.write(text + "\n")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="groupcoord-consumer-groups",
        description="List, describe, delete and reset consumer groups kept by the Spark group coordinator "
        "(the kafka-consumer-groups.sh of this system).",
    )
    p.add_argument("--bootstrap-server", help="Kafka brokers: host:port[,host:port] (required unless --checkpoint)")
    p.add_argument("--checkpoint", metavar="PATH",
                   help="read the groups from a stopped query's checkpoint (any path or URL Spark reads) instead of "
                   "asking the coordinator; --list and --describe only, and LOG-END-OFFSET/LAG only with "
                   "--bootstrap-server")
    p.add_argument("--requests-topic", default=DEFAULT_CONTROL_TOPIC, help="the coordinator's control topic")
    p.add_argument("--responses-topic", default=DEFAULT_RESPONSE_TOPIC, help="the coordinator's response topic")
    p.add_argument("--records-topic", default=DEFAULT_RECORDS_TOPIC, help="the coordinator's records topic")
    p.add_argument("--timeout", type=int, default=30000, help="ms to wait for each coordinator answer")
    p.add_argument("--command-config", help="a properties file of settings for the tool's Kafka clients, in "
                   "kafka-python's names with dots: security.protocol=SASL_SSL, sasl.mechanism=PLAIN, "
                   "sasl.plain.username=..., ssl.cafile=...")
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list all consumer groups")
    actions.add_argument("--describe", action="store_true", help="describe consumer group(s)")
    actions.add_argument("--delete", action="store_true", help="delete consumer group(s) with no active members")
    actions.add_argument("--delete-offsets", action="store_true", help="delete a group's offsets of --topic")
    actions.add_argument("--reset-offsets", action="store_true", help="reset a group's offsets (Empty groups only)")
    actions.add_argument("--history", action="store_true", help="a group's generations, members and assignments")
    p.add_argument("--group", action="append", default=[], help="consumer group id (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="apply to all groups")
    p.add_argument("--offsets", action="store_true", help="with --describe: offsets and lag (the default)")
    p.add_argument("--members", action="store_true", help="with --describe: the members")
    p.add_argument("--verbose", action="store_true", help="with --members: each member's assignment")
    p.add_argument("--state", nargs="?", const="", metavar="STATES",
                   help="with --describe: the group's state; with --list: each group's state, or only groups in "
                   "STATES (comma-separated, e.g. stable,empty)")
    p.add_argument("--type", nargs="?", const="", metavar="TYPES",
                   help="with --list: each group's type, or only groups of TYPES (comma-separated: classic, consumer, "
                   "share); this coordinator keeps classic and consumer (KIP-848) groups")
    p.add_argument("--topic", action="append", default=[], help="topic or topic:0,1,2 (repeatable)")
    p.add_argument("--all-topics", action="store_true", help="with --reset-offsets: every topic of the group")
    spec = p.add_mutually_exclusive_group()
    spec.add_argument("--to-earliest", action="store_true")
    spec.add_argument("--to-latest", action="store_true")
    spec.add_argument("--to-current", action="store_true")
    spec.add_argument("--to-offset", type=int)
    spec.add_argument("--shift-by", type=int)
    spec.add_argument("--to-datetime", help="YYYY-MM-DDTHH:mm:SS.sss, optionally with a zone (Z, +01:00)")
    spec.add_argument("--by-duration", help="PnDTnHnMnS: to the first record at or after now minus this")
    spec.add_argument("--from-file", help="a CSV plan: topic,partition,offset (one --group) or "
                      "group,topic,partition,offset lines, as --export writes them")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    p.add_argument("--export", action="store_true", help="with --reset-offsets: print the new offsets as a CSV plan")
    p.add_argument("--output", choices=("table", "json"), default="table", help="json: one JSON document")
    p.add_argument("--picture", help="with --history: write a timeline (.png) or a page (.html)")
    return p


def main(argv: Sequence[str] | None = None, transport: Transport | None = None,
         log_offsets: LogOffsets | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Entry point. `transport` and `log_offsets` may be given (tests, embedding); otherwise built from the
    bootstrap servers and topic names."""
    args = build_parser().parse_args(argv)
    o = Output(out, err, args.output == "json")
    own_transport = transport is None
    own_offsets = log_offsets is None
    try:
        _check(args)
        settings = command_config(args.command_config) if args.command_config else {}
        if args.history:
            return _history(args, o, settings)
        if transport is None and args.checkpoint:
            from admin.offline import CheckpointTransport

            transport = CheckpointTransport.read(args.checkpoint, None if args.list or args.all_groups else args.group)
        transport = transport or KafkaTransport(args.bootstrap_server, args.requests_topic, args.responses_topic,
                                                **{"client_id": "groupcoord-admin", **settings})
        admin = GroupAdmin(transport, args.timeout / 1000)
        if args.list:
            return _list(admin, o, args.state, args.type)
        groups = [g for g, *_ in admin.list_groups()] if args.all_groups else args.group
        if args.delete:
            return _delete(admin, groups, o)
        if log_offsets is None:
            log_offsets = UnknownLogOffsets() if args.bootstrap_server is None else LogOffsets(args.bootstrap_server,
                                                                                                 **settings)
        if args.describe:
            return _describe(args, admin, log_offsets, groups, o)
        if args.delete_offsets:
            return _delete_offsets(args, admin, log_offsets, o)
        return _reset(args, admin, log_offsets, groups, o)
    except (CommandError, CheckpointError, ResetError, GroupError, RequestTimeoutError, TimeoutError) as exc:
        err.write(f"\nError: {exc}\n")
        return 1
    finally:
        if own_transport and transport is not None:
            transport.close()
        if own_offsets and log_offsets is not None:
            log_offsets.close()


def _check(args: argparse.Namespace) -> None:
    """Kafka's option rules (ConsumerGroupCommandOptions.checkArgs), with its wording where it has one."""
    if args.checkpoint is None and args.bootstrap_server is None:
        raise CommandError("Missing required argument \"[bootstrap-server]\"")
    if args.checkpoint is not None and not (args.list or args.describe):
        raise CommandError("Option --checkpoint reads a stopped query's state: it takes only --list or --describe")
    needs_group = args.describe or args.delete or args.reset_offsets
    if needs_group and not (args.group or args.all_groups):
        raise CommandError("Option --group or --all-groups must be specified")
    if (args.delete_offsets or args.history) and len(args.group) != 1:
        raise CommandError("Option --group must be given exactly one group")
    if args.delete_offsets and not args.topic:
        raise CommandError("Option --delete-offsets needs --topic")
    if args.reset_offsets:
        if not (args.topic or args.all_topics or args.from_file):
            raise CommandError("Option --reset-offsets needs one of the following scopes: --all-topics, --topic")
        if args.topic and args.all_topics:
            raise CommandError("Option --all-topics cannot be used with --topic")
        if not any((args.to_earliest, args.to_latest, args.to_current, args.to_offset is not None,
                    args.shift_by is not None, args.to_datetime, args.by_duration, args.from_file)):
            raise CommandError("Option --reset-offsets needs a reset specification: --to-datetime, --by-duration, "
                               "--to-earliest, --to-latest, --shift-by, --from-file, --to-current, --to-offset")
        if args.by_duration:
            duration_ms(args.by_duration)  # refused here, before anything is asked of the cluster
        if args.to_datetime:
            datetime_ms(args.to_datetime)
    if args.export and not args.reset_offsets:
        raise CommandError("Option --export is only valid with --reset-offsets")
    if args.export and args.output == "json":
        raise CommandError("Option --export prints CSV; it cannot be used with --output json")
    if args.picture and not args.history:
        raise CommandError("Option --picture is only valid with --history")
    if args.state is not None and not (args.describe or args.list):
        raise CommandError("Option --state is only valid with --describe or --list")
    if args.type is not None and not args.list:
        raise CommandError("Option --type is only valid with --list")
    if args.describe and args.state:
        raise CommandError("Option --describe does not take a value for --state")
    if sum((args.offsets, args.members, args.state is not None)) > 1:
        raise CommandError("Option --describe takes only one of --offsets, --members, --state")


SHARED_SETTINGS = frozenset(KafkaConsumer.DEFAULT_CONFIG) & frozenset(KafkaProducer.DEFAULT_CONFIG)
"""What `--command-config` may set: the tool runs consumers and a producer, so only settings both take (security,
timeouts, client.id, ...)."""


def command_config(path: str) -> dict[str, object]:
    """`--command-config`: Kafka's client properties file, in kafka-python's names with dots for underscores (the
    job's `kafka.*` keys without the prefix). `bootstrap.servers` there is ignored: `--bootstrap-server` says it."""
    try:
        props = read_properties(Path(path))
    except OSError as exc:
        raise CommandError(f"Cannot read --command-config {path}: {exc.strerror}") from None
    settings = kafka_python_settings(props)
    settings.pop("bootstrap_servers", None)
    unknown = sorted(k.replace("_", ".") for k in settings if k not in SHARED_SETTINGS)
    if unknown:
        raise CommandError(f"--command-config {path}: unknown settings {', '.join(unknown)}; the tool takes "
                           "kafka-python's client settings, e.g. security.protocol, sasl.mechanism, "
                           "sasl.plain.username, ssl.cafile")
    return settings


GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
GROUP_TYPES = ("Consumer", "Classic", "Share")
"""The names Kafka's tool accepts and prints (ConsumerGroupState, GroupType)."""


def _parse_names(text: str, valid: Sequence[str], what: str) -> set[str]:
    by_lower = {name.lower(): name for name in valid}
    names = {by_lower.get(part.strip().lower()) for part in text.split(",")}
    if None in names:
        raise CommandError(f"Invalid {what} list '{text}'. Valid {what}s are: {', '.join(valid)}")
    return names  # type: ignore[return-value]


def _list(admin: GroupAdmin, o: Output, states: str | None, types: str | None) -> int:
    """Group ids one per line; with --state / --type (Kafka's KIP-518 / KIP-1043 listing) a GROUP column
    padded as Kafka pads it, then TYPE and STATE, filtered by the given names if any."""
    wanted_states = _parse_names(states, GROUP_STATES, "state") if states else None
    wanted_types = _parse_names(types, GROUP_TYPES, "type") if types else None
    groups = [(g, t, s, kind.capitalize()) for g, t, s, kind in admin.list_groups()
              if (wanted_states is None or s in wanted_states)
              and (wanted_types is None or kind.capitalize() in wanted_types)]
    if o.json:
        o.records(("GROUP", "PROTOCOL-TYPE", "STATE", "TYPE"), groups)
    elif states is None and types is None:
        for group_id, *_ in groups:
            o.out.write(group_id + "\n")
    else:
        def line(group: str, group_type: str, state: str) -> list[str]:
            return [group] + [group_type] * (types is not None) + [state] * (states is not None)

        width = max([15] + [len(g) for g, *_ in groups]) + 10
        for first, *rest in [line("GROUP", "TYPE", "STATE")] + [line(g, kind, s) for g, _, s, kind in groups]:
            o.out.write(first.ljust(width) + "".join(" " + v.ljust(20) for v in rest) + "\n")
    return 0


def _state_message(desc: GroupDescription, o: Output) -> bool:
    """Kafka's shouldPrintMemberState: a message on stderr, and whether a table follows."""
    if desc.state == "Dead":
        o.warn(f"\nError: Consumer group '{desc.group_id}' does not exist.")
        return False
    if desc.state == "Empty":
        o.warn(f"\nConsumer group '{desc.group_id}' has no active members.")
    elif desc.state in REBALANCING:
        o.warn(f"\nWarning: Consumer group '{desc.group_id}' is rebalancing.")
    return True


def offset_rows(desc: GroupDescription, committed: dict[tuple[str, int], int],
                log_end: dict[tuple[str, int], int]) -> list[tuple[Any, ...]]:
    """One row per partition that is committed or assigned: Kafka's describe --offsets. LAG = LOG-END-OFFSET
    - CURRENT-OFFSET, None (`-`) without a committed offset."""
    owners = {tp: m for m in desc.members for tp in m.assignment}
    rows = []
    for tp in sorted(set(committed) | set(owners)):
        current = committed.get(tp)
        end = log_end.get(tp)
        lag = end - current if current is not None and end is not None else None
        m = owners.get(tp)
        rows.append((desc.group_id, tp[0], tp[1], current, end, lag, m.member_id if m else None,
                     m.client_host if m else None, m.client_id if m else None))
    # Members without partitions still show up, as in Kafka (topic and partition `-`).
    for m in desc.members:
        if not m.assignment:
            rows.append((desc.group_id, None, None, None, None, None, m.member_id, m.client_host, m.client_id))
    return rows


def pending_rows(rows: list[tuple[Any, ...]],
                 pending: set[tuple[str, int]]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """The offset rows with a last column PENDING-TRANSACTION, `yes` where a transaction of the group has written an
    offset of the partition that its marker has not committed or dropped yet (CURRENT-OFFSET is still the committed
    one). Ours: Kafka's tool does not show them; shown only when the group has some, as GROUP-INSTANCE-ID only when
    a member is static."""
    return (*OFFSET_COLUMNS, "PENDING-TRANSACTION"), [
        (*row, "yes" if (row[1], row[2]) in pending else None) for row in rows]


def _describe(args: argparse.Namespace, admin: GroupAdmin, offsets: LogOffsets | UnknownLogOffsets, groups: list[str],
              o: Output) -> int:
    columns: Sequence[str] = STATE_COLUMNS if args.state is not None else OFFSET_COLUMNS
    all_rows: list[Sequence[Any]] = []
    status = 0
    for group_id in groups:
        desc = admin.describe(group_id)
        if not _state_message(desc, o):
            status = 1
            continue
        if args.members:
            columns, rows = member_rows(desc, args.verbose)
            o.table(columns, rows, {"#PARTITIONS": 15})
        elif args.state is not None:
            coordinator = (f"{args.checkpoint}  (checkpoint)" if args.checkpoint
                           else f"{args.bootstrap_server}  ({args.requests_topic})")
            rows = [(desc.group_id, coordinator, desc.protocol or None, desc.state, len(desc.members))]
            if args.verbose and desc.group_epoch is not None:  # Kafka 4's --verbose, for a consumer group
                columns = (*STATE_COLUMNS, "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH")
                rows = [rows[0] + (desc.group_epoch, desc.assignment_epoch)]
            o.table(columns, rows, {"ASSIGNMENT-STRATEGY": 20, "STATE": 20})
        else:
            committed = admin.committed(group_id)
            assigned = {tp for m in desc.members for tp in m.assignment}
            rows = offset_rows(desc, committed, offsets.log_end(sorted(set(committed) | assigned)))
            pending = admin.pending(group_id, set(committed) | assigned)
            columns = OFFSET_COLUMNS
            if pending:
                columns, rows = pending_rows(rows, pending)
            o.table(columns, rows, {"PARTITION": 10, "CURRENT-OFFSET": 15, "LOG-END-OFFSET": 15, "LAG": 15})
        all_rows.extend(rows)
    o.records(columns, all_rows)
    return status


def member_rows(desc: GroupDescription, verbose: bool) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """Kafka's describe --members: GROUP-INSTANCE-ID only if some member is static; ASSIGNMENT if verbose (for a
    consumer group, Kafka 4's member epochs: CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT)."""
    static = any(m.group_instance_id for m in desc.members)
    consumer = desc.group_epoch is not None
    columns = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if static else []) + ["HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        columns += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"] if consumer else [
            "ASSIGNMENT"]
    rows = []
    for m in desc.members:
        row: list[Any] = [desc.group_id, m.member_id]
        if static:
            row.append(m.group_instance_id)
        row += [m.client_host, m.client_id, len(m.assignment)]
        if verbose and consumer:
            row += [m.member_epoch, hist.format_assignment(m.assignment), desc.assignment_epoch,
                    hist.format_assignment(m.target_assignment or ())]
        elif verbose:
            row.append(hist.format_assignment(m.assignment))
        rows.append(tuple(row))
    return tuple(columns), rows


def _delete(admin: GroupAdmin, groups: list[str], o: Output) -> int:
    results = {g: admin.delete(g) for g in groups}
    failed = {g: c for g, c in results.items() if c}
    if o.json:
        o.records(("GROUP", "ERROR"), [(g, None if not c else for_code(c).name) for g, c in results.items()])
    else:
        ok = [g for g in groups if not results[g]]
        if ok:
            o.out.write(f"Deletion of requested consumer groups ({', '.join(repr(g) for g in ok)}) was successful.\n")
        if failed:
            o.out.write("Deletion of some consumer groups failed:\n")
            for g, code in failed.items():
                o.out.write(f"* Group '{g}' could not be deleted due to: {_reason(code)}\n")
    return 1 if failed else 0


def _reason(code: int) -> str:
    return {68: "The group is not empty.", 69: "The group id does not exist."}.get(code, for_code(code).description)


def _partitions(topics: Iterable[str], offsets: LogOffsets) -> list[tuple[str, int]]:
    """`--topic t` (every partition) or `--topic t:0,2`."""
    out = []
    for spec in topics:
        name, _, parts = spec.partition(":")
        if parts:
            out.extend((name, int(p)) for p in parts.split(","))
        else:
            found = offsets.partitions(name)
            if not found:
                raise CommandError(f"Topic '{name}' does not exist")
            out.extend((name, p) for p in found)
    return sorted(set(out))


def _delete_offsets(args: argparse.Namespace, admin: GroupAdmin, offsets: LogOffsets, o: Output) -> int:
    group_id = args.group[0]
    partitions = _partitions(args.topic, offsets)
    top, per_partition = admin.delete_offsets(group_id, partitions)
    if top:
        raise CommandError(f"Deletion of offsets failed for group '{group_id}': {for_code(top).name}. "
                           f"{_reason(top)}")
    rows = [(t, p, "Successful" if not per_partition.get((t, p)) else f"Error: {for_code(per_partition[(t, p)]).description}")
            for t, p in partitions]
    failed = any(code for code in per_partition.values())
    if not o.json:
        if failed:
            o.out.write(f"Offset deletion for group '{group_id}' failed for some partitions.\n")
        else:
            o.out.write(f"Request succeed for deleting offsets from group '{group_id}'.\n")
    o.table(("TOPIC", "PARTITION", "STATUS"), rows, {"TOPIC": 30, "PARTITION": 15, "STATUS": 15})
    o.records(("TOPIC", "PARTITION", "STATUS"), rows)
    return 1 if failed else 0


def _reset(args: argparse.Namespace, admin: GroupAdmin, offsets: LogOffsets, groups: list[str], o: Output) -> int:
    plan = read_plan(_read_text(args.from_file), args.group) if args.from_file else None
    all_rows = []
    for group_id in groups:
        desc = admin.describe(group_id)
        if desc.state not in ("Empty", "Dead"):
            raise CommandError(f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
                               f"current state is {desc.state}.")
        if plan is not None and group_id not in plan:
            o.err.write(f"\nError: No reset plan for group {group_id} found\n")
            continue
        if plan is None:
            committed = admin.committed(group_id)
            partitions = sorted(committed) if args.all_topics else _partitions(args.topic, offsets)
            target = new_offsets(args, partitions, committed, offsets)
        else:  # the plan names the partitions and their offsets
            target = new_offsets(args, [], {}, offsets, plan[group_id])
        if args.execute:
            errors = {tp: c for tp, c in admin.commit(group_id, target).items() if c}
            if errors:
                raise CommandError(f"Resetting offsets of group '{group_id}' failed: "
                                   + ", ".join(f"{t}-{p}: {for_code(c).name}" for (t, p), c in sorted(errors.items())))
        rows = [(group_id, t, p, off) for (t, p), off in sorted(target.items())]
        if not args.export:
            o.table(RESET_COLUMNS, rows, {"GROUP": 30, "TOPIC": 30, "PARTITION": 10, "NEW-OFFSET": 15})
        all_rows.extend(rows)
    if args.export:
        o.out.write(write_plan(all_rows, single_group=len(args.group) == 1))
    o.records(RESET_COLUMNS, all_rows)
    return 0


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise CommandError(f"Cannot read the reset plan {path}: {exc.strerror}") from None


def history_rows(snapshots: list[hist.Snapshot]) -> list[tuple[Any, ...]]:
    rows = []
    for snap in snapshots:
        when = dt.datetime.fromtimestamp(snap.timestamp_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        base = (when, snap.generation, snap.state, snap.protocol or None, snap.leader or None)
        if not snap.members:
            rows.append(base + (None, None, None, None))
        for m in snap.members:
            rows.append(base + (m.member_id, m.group_instance_id, m.client_id, hist.format_assignment(m.assignment)))
    return rows


def _history(args: argparse.Namespace, o: Output, settings: dict[str, object]) -> int:
    group_id = args.group[0]
    records = hist.read_records(args.bootstrap_server, args.records_topic, timeout_s=args.timeout / 1000,
                                **settings)
    snapshots = hist.history(records, group_id)
    if not snapshots:
        raise CommandError(f"Consumer group '{group_id}' has no history in {args.records_topic}.")
    rows = history_rows(snapshots)
    o.table(HISTORY_COLUMNS, rows)
    o.records(HISTORY_COLUMNS, rows)
    if args.picture:
        render = hist.render_html if args.picture.endswith(".html") else hist.render_png
        render(snapshots, group_id, args.picture)
        o.warn(f"Wrote {args.picture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
