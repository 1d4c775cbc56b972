"""The golden replay: record the core's entry-point calls of a test run, then replay them through today's code.

A refactoring of `state/` must change no output byte for byte. This tool holds it to that: a test run with the
recorder on writes every call of the core's entry points (the step function, routing, the upgrade of a stored
state, the offline answers, the group directory, the fast-answer rules a gateway decides with, the codec of views
and requests), with its inputs and what it returned, to files outside the repository; `check` replays every input
through the code as it is now and compares the outputs byte for byte (encoded responses, records, views,
deadlines, dead letters, fast answers; a raised error by type and message).

    GOLDEN_RECORD=/work/team/golden/run1 .venv/bin/python -m pytest -p tests.support.golden -m "not spark and not broker"
    .venv/bin/python -m tests.support.golden check /work/team/golden/run1

Values are recorded by class name and fields, not by module path, so a class that moves to another module of
`state/` still replays (`ENTRY_POINTS` says where each entry point lives now; a move updates it). A step's
`read_offsets` is recorded as what it returned, and replayed as the same answers, in order; how often the step read
them is part of its output.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import functools
import importlib
import io
import itertools
import os
import pickle
import pkgutil
import sys
import threading
import weakref
from collections import Counter
from collections.abc import MappingView
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

import msgspec

ENTRY_POINTS: dict[str, str] = {
    "step_group": "state.batch:step_group",
    "route": "state.batch:route",
    "upgrade_state": "state.batch:upgrade_state",
    "load_group": "state.batch:load_group",
    "offline.answer": "state.offline:answer",
    "offline.list_groups": "state.offline:list_groups",
    "heartbeat_from_view": "state.views.fast_answers:heartbeat_from_view",
    "consumer_heartbeat_from_view": "state.views.fast_answers:consumer_heartbeat_from_view",
    "share_heartbeat_from_view": "state.views.fast_answers:share_heartbeat_from_view",
    "declares_nothing_new": "state.views.fast_answers:declares_nothing_new",
    "commit_from_view": "state.views.fast_answers:commit_from_view",
    "commit_response": "state.views.fast_answers:commit_response",
    "fetch_from_view": "state.offsets.handlers:fetch_from_view",
    "decode_view": "state.views.published:decode_view",
    "decode_mark": "state.views.published:decode_mark",
    "encode_mark": "state.views.published:encode_mark",
    "is_member_id_round": "state.classic.member_id_round:is_member_id_round",
    "member_id_required": "state.classic.member_id_round:member_id_required",
    "pending_member_id": "state.classic.member_id_round:pending_member_id",
    "decode_request": "state.wire:decode_request",
    "error_response": "state.wire:error_response",
    "decode_key": "state.records:decode_key",
}
"""Logical name -> where the function is now (`module:attribute`)."""

DIRECTORY = "state.views.directory:GroupDirectory"
"""The group directory: a stateful object, recorded call by call per instance."""
DIRECTORY_METHODS = ("apply", "answer", "count_by_state")


def _resolve(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


# -- values without module paths ---------------------------------------------------------------------------------

class _Reader:
    """Stands for a step's `read_offsets` in a recording."""


class Tagged(NamedTuple):
    """A value `freeze` rewrote: `tag` says how, `name` names its class, `data` holds its fields."""

    tag: str
    name: str
    data: Any


def freeze(value: Any) -> Any:
    """`value` as plain data that pickles the same whatever module a class of `state/` lives in (classes of
    `state/` by name and fields; sets sorted, so a pickle does not depend on the hash seed)."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str, bytes):
        return value
    if kind is list or kind is tuple:
        return kind(freeze(v) for v in value)
    if kind is dict:
        return {freeze(k): freeze(v) for k, v in value.items()}
    if kind in (set, frozenset):
        return Tagged("set", kind.__name__, sorted((freeze(v) for v in value), key=repr))
    if isinstance(value, _Reader):
        return Tagged("reader", "", None)
    module = kind.__module__
    if module == "state" or module.startswith("state."):
        if isinstance(value, enum.Enum):
            return Tagged("state-enum", kind.__name__, value.value)
        return Tagged("state", kind.__name__, {name: freeze(v) for name, v in _fields(value)})
    if isinstance(value, msgspec.Struct):
        return Tagged("struct", f"{module}:{kind.__qualname__}",
                {name: freeze(getattr(value, name)) for name in kind.__struct_fields__})
    return value


def _fields(value: Any) -> Iterator[tuple[str, Any]]:
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield f.name, getattr(value, f.name)
    elif isinstance(value, msgspec.Struct):
        for name in type(value).__struct_fields__:
            yield name, getattr(value, name)
    else:
        slots = [s for cls in type(value).__mro__ for s in getattr(cls, "__slots__", ())]
        names = slots or list(vars(value))
        for name in names:
            if name != "__weakref__":
                yield name, getattr(value, name)


@functools.cache
def _state_classes() -> dict[str, list[type]]:
    import state

    found: dict[str, list[type]] = {}
    for info in pkgutil.walk_packages(state.__path__, "state."):
        if info.name.endswith("__main__"):
            continue
        for obj in vars(importlib.import_module(info.name)).values():
            if isinstance(obj, type) and obj.__module__.startswith("state.") and obj not in found.get(obj.__name__, []):
                found.setdefault(obj.__name__, []).append(obj)
    return found


def _state_class(name: str) -> type:
    classes = _state_classes().get(name, [])
    if len(classes) != 1:
        raise LookupError(f"{len(classes)} classes named {name} in state/: {classes}")
    return classes[0]


def thaw(value: Any, reader: Callable[[], Any] | None = None) -> Any:
    """The value `freeze` made, built with today's classes."""
    kind = type(value)
    if kind is list:
        return [thaw(v, reader) for v in value]
    if kind is dict:
        return {thaw(k, reader): thaw(v, reader) for k, v in value.items()}
    if kind is tuple:
        return tuple(thaw(v, reader) for v in value)
    if kind is not Tagged:
        return value
    tag = value.tag
    if tag == "reader":
        return reader
    if tag == "set":
        return (set if value[1] == "set" else frozenset)(thaw(v, reader) for v in value[2])
    if tag == "state-enum":
        return _state_class(value[1])(value[2])
    fields = {name: thaw(v, reader) for name, v in value[2].items()}
    if tag == "struct":
        return _resolve(value[1])(**fields)
    cls = _state_class(value[1])
    if dataclasses.is_dataclass(cls) or issubclass(cls, msgspec.Struct):
        return cls(**fields)
    obj = cls.__new__(cls)
    for name, v in fields.items():
        object.__setattr__(obj, name, v)
    return obj


def as_bytes(value: Any) -> bytes:
    """A frozen value's bytes: pickled without the memo, so equal values give equal bytes whether or not they share
    objects."""
    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=5)
    pickler.fast = True
    pickler.dump(value)
    return out.getvalue()


# -- recording ---------------------------------------------------------------------------------------------------

class Recorder:
    """Appends one pickle per call to `<directory>/calls-<pid>.pkl`."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"calls-{os.getpid()}.pkl"
        self.file = open(self.path, "ab")
        self.lock = threading.Lock()
        self.instances: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.depth = threading.local()

    def write(self, entry: tuple) -> None:
        try:
            data = pickle.dumps(entry, protocol=5)
        except Exception as exc:  # noqa: BLE001 - an input the tool cannot keep: counted, not fatal
            data = pickle.dumps(("unrecordable", entry[0], f"{type(exc).__name__}: {exc}"), protocol=5)
        with self.lock:
            self.file.write(data)
            self.file.flush()

    def call(self, name: str, function: Callable, args: tuple, kwargs: dict) -> Any:
        reads: list[Any] = []
        args, kwargs = list(args), dict(kwargs)
        for where, items in (("args", args), ("kwargs", kwargs)):
            for key in (range(len(items)) if where == "args" else list(items)):
                if name == "step_group" and callable(items[key]):
                    items[key] = _recording_reader(items[key], reads)
                elif isinstance(items[key], (Iterator, MappingView)):  # kept as the list it yields, passed so
                    items[key] = list(items[key])
        frozen_in = freeze((tuple(_Reader() if isinstance(a, _RecordingReader) else a for a in args),
                            {k: _Reader() if isinstance(v, _RecordingReader) else v for k, v in kwargs.items()}))
        try:
            result = function(*args, **kwargs)
        except Exception as exc:
            self.write((name, frozen_in, freeze(reads), as_bytes(_raised(exc, len(reads)))))
            raise
        self.write((name, frozen_in, freeze(reads), as_bytes(("return", freeze(result), len(reads)))))
        return result


class _RecordingReader:
    def __init__(self, read: Callable[[], Any], reads: list[Any]) -> None:
        self.read, self.reads = read, reads

    def __call__(self) -> Any:
        value = self.read()
        self.reads.append(value)
        return value


def _recording_reader(read: Callable[[], Any], reads: list[Any]) -> _RecordingReader:
    return _RecordingReader(read, reads)


def _raised(exc: BaseException, reads: int) -> tuple:
    return ("raise", type(exc).__name__, str(exc), reads)


def install(directory: Path) -> Recorder:
    """Wrap every entry point (where it is defined and wherever a module imported it) and the directory's methods."""
    import state

    for info in pkgutil.walk_packages(state.__path__, "state."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    recorder = Recorder(directory)
    for name, path in ENTRY_POINTS.items():
        original = _resolve(path)

        @functools.wraps(original)
        def wrapper(*args, __name=name, __original=original, **kwargs):
            return recorder.call(__name, __original, args, kwargs)

        for module in list(sys.modules.values()):
            for attr, value in list(vars(module).items()) if module is not None else ():
                if value is original:
                    setattr(module, attr, wrapper)
    directory_class = _resolve(DIRECTORY)
    serials = iter(range(1, 1 << 62))
    original_init = directory_class.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        recorder.instances[self] = next(serials)
        recorder.write(("GroupDirectory()", freeze((args, kwargs)), recorder.instances[self]))

    directory_class.__init__ = init
    for method in DIRECTORY_METHODS:
        original = getattr(directory_class, method)

        def wrapped(self, *args, __method=method, __original=original, **kwargs):
            serial = recorder.instances.get(self)
            frozen_in = freeze((args, kwargs))
            try:
                result = __original(self, *args, **kwargs)
            except Exception as exc:
                recorder.write((f"GroupDirectory.{__method}", frozen_in, serial, as_bytes(_raised(exc, 0))))
                raise
            recorder.write((f"GroupDirectory.{__method}", frozen_in, serial,
                            as_bytes(("return", freeze(result), 0))))
            return result

        setattr(directory_class, method, wrapped)
    return recorder


def pytest_configure(config) -> None:  # noqa: ANN001 - pytest's hook
    """Recording is on when GOLDEN_RECORD names a directory (the plugin is loaded with `-p tests.support.golden`)."""
    directory = os.environ.get("GOLDEN_RECORD")
    if directory:
        install(Path(directory))


# -- checking ----------------------------------------------------------------------------------------------------

def entries(directory: Path) -> Iterator[tuple[str, int, tuple]]:
    """(file, index in it, entry) of every recorded call."""
    for path in sorted(directory.glob("calls-*.pkl")):
        with open(path, "rb") as f:
            for index in itertools.count():
                try:
                    yield path.name, index, pickle.load(f)
                except EOFError:
                    break


EXCLUDED = "excluded.txt"
"""In a recording's directory: the calls that did not replay identically on the code that recorded them (a test had
monkeypatched what they call: an assignor that raises, a handler that fails), one `file index` a line; `check`
passes over them and says how many."""


def check(directory: Path, show: int = 10, baseline: bool = False) -> tuple[Counter, Counter, list[str]]:
    """Replay every recorded call; (calls per entry point, mismatches per entry point, the first `show` of them).
    `baseline`: run on the code that recorded them, writes the calls that differ to EXCLUDED."""
    excluded_path = directory / EXCLUDED
    excluded = set()
    if not baseline and excluded_path.exists():
        excluded = {tuple(line.split()) for line in excluded_path.read_text().splitlines() if line.strip()}
    differing: list[str] = []
    calls: Counter = Counter()
    mismatches: Counter = Counter()
    shown: list[str] = []
    directories: dict[tuple[str, int], Any] = {}
    functions = {name: _resolve(path) for name, path in ENTRY_POINTS.items()}
    directory_class = _resolve(DIRECTORY)
    for file, index, entry in entries(directory):
        name = entry[0]
        if name == "unrecordable":
            calls["unrecordable " + entry[1]] += 1
            continue
        if name == "GroupDirectory()":
            args, kwargs = thaw(entry[1])
            directories[(file, entry[2])] = directory_class(*args, **kwargs)
            continue
        if (file, str(index)) in excluded:
            calls["excluded " + name] += 1
            continue
        calls[name] += 1
        if name.startswith("GroupDirectory."):
            _, frozen_in, serial, expected = entry
            target = directories.get((file, serial))
            if target is None:
                target = directories[(file, serial)] = directory_class()  # made before recording began
            function, reads = getattr(target, name.split(".", 1)[1]), []
        else:
            _, frozen_in, frozen_reads, expected = entry
            function, reads = functions[name], list(thaw(frozen_reads))
        answered: list[Any] = []

        def reader(reads=reads, answered=answered):
            if len(answered) >= len(reads):
                raise AssertionError("read_offsets called more often than when recorded")
            answered.append(reads[len(answered)])
            return answered[-1]

        args, kwargs = thaw(frozen_in, reader)
        try:
            got = as_bytes(("return", freeze(function(*args, **kwargs)), len(answered)))
        except Exception as exc:  # noqa: BLE001 - compared with what was recorded
            got = as_bytes(_raised(exc, len(answered)))
        if got != expected:
            differing.append(f"{file} {index}")
            mismatches[name] += 1
            if len(shown) < show:
                shown.append(f"{file} {name}{_brief(frozen_in)}:\n  recorded {pickle.loads(expected)!r:.600}\n"
                             f"  now      {pickle.loads(got)!r:.600}")
    if baseline:
        excluded_path.write_text("".join(line + "\n" for line in differing))
    return calls, mismatches, shown


def _brief(frozen_in: Any) -> str:
    return f"{frozen_in!r:.300}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.golden", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    checking = sub.add_parser("check", help="replay a recording through today's code")
    checking.add_argument("directory", type=Path)
    checking.add_argument("--show", type=int, default=10, help="mismatches to print")
    checking.add_argument("--baseline", action="store_true",
                          help=f"on the code that recorded: note the calls that differ in {EXCLUDED}")
    args = parser.parse_args(argv)
    calls, mismatches, shown = check(args.directory, args.show, args.baseline)
    for name in sorted(calls):
        print(f"{calls[name]:8d} {name}" + (f"  ({mismatches[name]} differ)" if mismatches[name] else ""))
    total = sum(v for k, v in calls.items() if not k.startswith(("unrecordable", "excluded")))
    print(f"{total} calls replayed, {sum(mismatches.values())} differ")
    for line in shown:
        print(line)
    return 1 if mismatches else 0


if __name__ == "__main__":
    from tests.support.golden import main as imported_main  # one Tagged class: the one the recordings pickled

    sys.exit(imported_main())
