"""kafka-python's client settings as librdkafka's: the job's `kafka.*` keys (and the gateway's) are kafka-python's
names; the job's hot path (`streaming.kafka_io.librdkafka`) and the gateway's producer (`gateway.upstream.appender`) run
on librdkafka, and take them through `confluent_config`, which refuses, naming it, any setting with no equivalent.
"""

from __future__ import annotations

from typing import Mapping

_NAMES: dict[str, object] = {
    "bootstrap_servers": "bootstrap.servers",
    "client_id": "client.id",
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_plain_username": "sasl.username",
    "sasl_plain_password": "sasl.password",
    "sasl_kerberos_service_name": "sasl.kerberos.service.name",
    "ssl_cafile": "ssl.ca.location",
    "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location",
    "ssl_password": "ssl.key.password",
    "ssl_crlfile": "ssl.crl.location",
    "ssl_ciphers": "ssl.cipher.suites",
    "ssl_check_hostname": lambda value: ("ssl.endpoint.identification.algorithm",
                                         "https" if str(value).lower() == "true" else "none"),
    "metadata_max_age_ms": "metadata.max.age.ms",
    "connections_max_idle_ms": "connections.max.idle.ms",
    "reconnect_backoff_ms": "reconnect.backoff.ms",
    "reconnect_backoff_max_ms": "reconnect.backoff.max.ms",
    "retry_backoff_ms": "retry.backoff.ms",
    "request_timeout_ms": "socket.timeout.ms",
    "receive_buffer_bytes": "socket.receive.buffer.bytes",
    "send_buffer_bytes": "socket.send.buffer.bytes",
}
"""kafka-python's setting -> librdkafka's (a name, or a function of the value giving (name, value))."""


def unmappable(config: Mapping[str, object]) -> list[str]:
    """The settings of `config` (kafka-python's names) that librdkafka has no equivalent for."""
    return sorted(name for name in config if name not in _NAMES)


def confluent_config(config: Mapping[str, object]) -> dict[str, object]:
    """librdkafka's settings for `config` (kafka-python keyword arguments, as `client_config` makes them)."""
    missing = unmappable(config)
    if missing:
        raise ValueError(
            "kafka.client=confluent: no librdkafka equivalent for "
            f"{', '.join('kafka.' + m.replace('_', '.') for m in missing)}; "
            "remove it, or set kafka.client=kafka-python")
    out: dict[str, object] = {}
    for name, value in config.items():
        target = _NAMES[name]
        if callable(target):
            key, value = target(value)
        else:
            key = target
        out[key] = value if isinstance(value, (int, float, bool)) else str(value)
    if out.get("security.protocol") in ("SASL_PLAINTEXT", "SASL_SSL") and "sasl.mechanism" not in out:
        out["sasl.mechanism"] = "PLAIN"  # kafka-python's default, not librdkafka's (GSSAPI)
    return out


