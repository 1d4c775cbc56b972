"""One default per key: `conf/coordinator.properties` holds the default of every key it names, and the code that
reads the properties (always loaded over that file, `common.config.load`) keeps no second copy that could drift
from it; the core's own defaults (`CoordinatorConfig`, for callers without a properties file) are the same values."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from common.config import DEFAULT_PROPERTIES
from state.api import CoordinatorConfig, read_properties

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("schemas", "state", "assignors", "common", "streaming", "client", "admin", "gateway", "coordinator")


def test_no_code_reads_a_key_of_the_properties_with_a_default_of_its_own():
    keys = "|".join(re.escape(key) for key in read_properties(DEFAULT_PROPERTIES))
    fallback = re.compile(rf"""\.get\(\s*["']({keys})["']\s*(,|\)\s*or\b)""")
    found = [f"{path.relative_to(ROOT)}:{source[:match.start()].count(chr(10)) + 1}: {match.group(1)}"
             for package in PRODUCT for path in sorted((ROOT / package).rglob("*.py"))
             for source in [path.read_text()] for match in fallback.finditer(source)]
    assert not found, found


def test_the_core_s_defaults_are_the_properties_file_s():
    props = read_properties(DEFAULT_PROPERTIES)
    from_file, own = CoordinatorConfig.from_properties(props), CoordinatorConfig()
    names = [f.name for f in fields(CoordinatorConfig)]
    assert [name for name in names if name.replace("_", ".") not in props] == []
    assert {name: getattr(own, name) for name in names} == {name: getattr(from_file, name) for name in names}


def test_the_clients_default_topics_are_the_job_s():
    """The client library and the admin tool run where conf/coordinator.properties may not be (an application's
    machine), so they name the topics' defaults themselves, and a gateway built in a test has a views topic of its
    own: the same names the job's file gives."""
    from admin.cli import DEFAULT_RECORDS_TOPIC
    from client.transport import DEFAULT_CONTROL_TOPIC, DEFAULT_RESPONSE_TOPIC
    from gateway.front.server import GatewaySettings

    props = read_properties(DEFAULT_PROPERTIES)
    views = {f.name: f.default for f in fields(GatewaySettings)}["views_topic"]
    assert (DEFAULT_CONTROL_TOPIC, DEFAULT_RESPONSE_TOPIC, DEFAULT_RECORDS_TOPIC, views) == (
        props["topic.requests"], props["topic.responses"], props["topic.records"], props["topic.views"])
