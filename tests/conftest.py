"""Shared fixtures: one tansu broker and one SparkSession per test process (each pytest-xdist worker has its own),
and coordinator queries on fresh topics.

- `broker`: a real tansu on a free 127.0.0.1 port, started with the job's own embedded-broker code and killed by
  pid at the end of the session.
- `spark`: one local SparkSession configured from conf/spark-defaults.conf, as `coordinator run` configures it.
- `coordinator`: a factory; `coordinator(**overrides)` starts the query against fresh topics and returns a
  `tests.support.coordinator.CoordinatorRun`; every run is stopped at the end of the test.
"""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

from tests.support.coordinator import CoordinatorRun, new_run

SLOW_FIXTURES = {"spark": "spark", "broker": "broker"}
"""A test that uses one of these fixtures (directly or through another fixture) gets its marker, so that the fast
lane (`./tests/run --fast`: `-m "not spark and not broker"`) never starts Spark or a broker by accident."""

PER_WORKER_FIXTURES = {"broker", "spark"}
"""Under pytest-xdist (`./tests/run` runs two workers) each worker has its own broker and SparkSession."""

LONGEST_UNIT = "driver-jvm"
"""The tests that start their own driver JVMs (about a third of the suite's time): one unit, run first. As two
units run at once on three workers (the drills, the rest) both slowed so much that the run took 1,281 s: two cold
driver JVMs on two cores."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the `xdist_group` marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in SLOW_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_work_unit(item)))
    # The longest unit first, the rest as collected (`./tests/run` keeps this order: --no-loadscope-reorder), so
    # the other worker takes everything else meanwhile rather than one waiting for it at the end.
    items.sort(key=lambda item: item.get_closest_marker("xdist_group").args[0] != LONGEST_UNIT)


def _work_unit(item: pytest.Item) -> str:
    """What `--dist loadgroup` hands one worker at a time: the tests that share a session- or package-wide fixture of
    ours (a query, a gateway: it then starts once), else the test's module (its module-wide fixtures start once).
    Modules that start their own driver JVMs mark themselves `xdist_group("driver-jvm")`: one worker runs those one
    after another, while the other runs in-process queries, rather than two cold JVM starts sharing two cores."""
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        defs = info.name2fixturedefs.get(name) if info is not None else None
        if not defs or name in PER_WORKER_FIXTURES:
            continue
        fixture = defs[-1]
        module = getattr(fixture.func, "__module__", "") or ""
        if fixture.scope in ("session", "package") and module.startswith("tests."):
            return f"{module}.{name}"
    return item.nodeid.split("::", 1)[0]


@pytest.fixture(scope="session")
def broker() -> Iterator[str]:
    """Bootstrap servers of a session-wide tansu broker."""
    from streaming.kafka_io.embedded import start_broker

    embedded = start_broker()
    try:
        yield embedded.bootstrap_servers
    finally:
        embedded.stop()


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from common.config import DEFAULT_SPARK_DEFAULTS, read_spark_defaults
    from streaming.query import await_warm_up, spark_session

    conf = read_spark_defaults(DEFAULT_SPARK_DEFAULTS)
    conf["spark.app.name"] = "coordinator-tests"
    conf["spark.sql.warehouse.dir"] = str(tmp_path_factory.mktemp("warehouse"))
    session = spark_session(conf)
    await_warm_up(session)
    try:
        yield session
    finally:
        for query in session.streams.active:
            query.stop()
        session.stop()


@pytest.fixture
def coordinator(spark, broker, tmp_path) -> Iterator[Callable[..., CoordinatorRun]]:
    """`coordinator(start=True, **overrides)`: a coordinator query on fresh topics (property keys with dots may be
    passed as a dict: `coordinator(props={"group.max.size": "3"})`)."""
    runs: list[CoordinatorRun] = []

    def start(props: dict[str, str] | None = None, start: bool = True) -> CoordinatorRun:
        run = new_run(spark, broker, tmp_path, props, start=start)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.close()
