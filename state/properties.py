"""Kafka's properties files and client settings, for the job and the admin tool alike.

`read_properties` reads the Java-properties subset Kafka's configuration files use (`conf/coordinator.properties`,
the admin tool's `--command-config`); `kafka_python_settings` turns Kafka client property names
(`security.protocol`) into kafka-python's keyword arguments (`security_protocol`). They live in the core's package
because both the job (its executors too, which get `state/` but not `client/` or `admin/`) and the admin tool
need them, and neither should import the other; they touch no Kafka client and no group state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping


def read_properties(path: Path) -> dict[str, str]:
    """Java-properties subset: `key=value` or `key: value` lines, `#`/`!` comments, surrounding blanks ignored."""
    props: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            props[line] = ""
        else:
            props[line[:sep].strip()] = line[sep + 1:].strip()
    return props


def kafka_python_settings(props: Mapping[str, str]) -> dict[str, object]:
    """kafka-python keyword arguments from Kafka client property names (dots become underscores, case is folded);
    numeric strings become ints because kafka-python's settings are typed and properties are strings."""
    return {key.lower().replace(".", "_"): int(value) if isinstance(value, str) and value.lstrip("-").isdigit()
            else value for key, value in props.items()}
