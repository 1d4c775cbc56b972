"""The coordinator's configuration, read by the job and the gateway alike: `conf/coordinator.properties` (Kafka-style
dotted keys) and `conf/spark-defaults.conf`, overridden by a user file and then by command-line flags.

One properties map carries everything; the core picks its own keys with `CoordinatorConfig.from_properties`, and
`kafka.*` keys are client settings with kafka-python's names (`client_config`), except `kafka.client`, which picks
the library of the job's hot path (`streaming.kafka_io.kafka_clients.chosen_client`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from state.api import CoordinatorConfig, kafka_python_settings, read_properties

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
DEFAULT_PROPERTIES = CONF_DIR / "coordinator.properties"
DEFAULT_SPARK_DEFAULTS = CONF_DIR / "spark-defaults.conf"
LOG4J_CONFIG = CONF_DIR / "log4j2.properties"
"""The JVMs' logging; `coordinator run` gives it to the driver JVM it starts (`with_driver_logging`), the launchers in
deploy/spark to the JVMs spark-submit starts."""

KAFKA_PREFIX = "kafka."
"""Options and properties under this prefix go to kafka-python (dots become underscores), as the JVM connector
passes `kafka.*` options to its clients: `kafka.security.protocol=SASL_SSL`, `kafka.sasl.mechanism=PLAIN`,
`kafka.sasl.plain.username=...`, `kafka.ssl.cafile=...`."""

CLIENT_KEY = "kafka.client"
"""Not a client setting: which library reads the requests and produces the state task's output. `auto` (the
default): librdkafka (confluent-kafka) when it is installed and every `kafka.*` setting has a librdkafka
equivalent, else kafka-python; `confluent`: librdkafka or an error; `kafka-python`: kafka-python."""


def read_spark_defaults(path: Path) -> dict[str, str]:
    """spark-defaults.conf: `key value` (whitespace-separated) lines, as spark-submit reads them."""
    conf: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            conf[key] = value.strip()
    return conf


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """`key=value` strings from repeated command-line flags."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True)
class Topics:
    requests: str
    responses: str
    records: str
    dead_letters: str
    timers: str
    """Each state bucket's earliest deadline, for the source's timer rows (`streaming.kafka_io.timer_schedule`)."""
    views: str
    """Each group's view and the completeness marks, which gateways answer heartbeats and commits from."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "Topics":
        return cls(props["topic.requests"], props["topic.responses"], props["topic.records"],
                   props["topic.dead.letters"], props["topic.timers"], props["topic.views"])

    def partitions(self, props: Mapping[str, str]) -> dict[str, int]:
        return {self.requests: int(props["topic.requests.partitions"]),
                self.responses: int(props["topic.responses.partitions"]),
                self.records: int(props["topic.records.partitions"]),
                self.dead_letters: int(props["topic.dead.letters.partitions"]),
                self.timers: int(props["topic.timers.partitions"]),
                self.views: int(props["topic.views.partitions"])}

    def compacted(self) -> tuple[str, ...]:
        """Topics that hold the latest value per key (the cleanup policy is `topic.<name>.cleanup.policy`)."""
        return self.records, self.timers, self.views


def load(user_file: Path | None = None, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Defaults, then `user_file`, then `overrides`."""
    props = read_properties(DEFAULT_PROPERTIES)
    if user_file:
        props.update(read_properties(user_file))
    props.update(overrides or {})
    CoordinatorConfig.from_properties(props)  # fail at start-up, not in a task, on a bad coordinator key
    return props


def kafka_options(props: Mapping[str, str]) -> dict[str, str]:
    """The `kafka.*` options for the source and sink (bootstrap servers included)."""
    options = {k: v for k, v in props.items() if k.startswith("kafka.")}
    options["kafka.bootstrap.servers"] = props["bootstrap.servers"]
    return options


def client_config(options: Mapping[str, str]) -> dict[str, object]:
    """kafka-python keyword arguments from the `kafka.*` keys (`state.config.kafka_python_settings` of them
    without the prefix); other keys are not kafka-python's, nor is `kafka.client`
    (`streaming.kafka_io.kafka_clients.chosen_client`)."""
    config = kafka_python_settings({key[len(KAFKA_PREFIX):]: value for key, value in options.items()
                                    if key.lower().startswith(KAFKA_PREFIX) and key.lower() != CLIENT_KEY})
    if "bootstrap_servers" not in config:
        raise ValueError("kafka.bootstrap.servers is required")
    return config


def with_driver_logging(conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with `LOG4J_CONFIG` as the driver JVM's logging, unless its Java options name a log4j configuration
    already. Without it Spark falls back to its own defaults: its start-up banners and every WARN of every class."""
    out = dict(conf)
    key = "spark.driver.extraJavaOptions"
    options = out.get(key, "")
    if "log4j2.configurationFile" not in options and LOG4J_CONFIG.is_file():
        out[key] = f"{options} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}".strip()
    return out
