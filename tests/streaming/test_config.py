"""Configuration files and precedence: defaults, then a user file, then flags."""

from __future__ import annotations

import pytest

from common import config
from streaming.kafka_io.kafka_clients import chosen_client
from common.librdkafka_config import confluent_config


def test_defaults_then_user_file_then_flags(tmp_path):
    user = tmp_path / "my.properties"
    user.write_text("# comment\ntopic.requests = mine\ngroup.max.size: 5\ntrigger.interval.ms=500\n")
    props = config.load(user, {"trigger.interval.ms": "250"})
    assert props["topic.requests"] == "mine"
    assert props["group.max.size"] == "5"
    assert props["trigger.interval.ms"] == "250"
    assert props["topic.responses"] == "group-coordinator-responses"  # from conf/coordinator.properties


def test_a_bad_coordinator_value_fails_at_start_up():
    with pytest.raises(ValueError):
        config.load(overrides={"group.max.size": "many"})


def test_spark_defaults_are_whitespace_separated():
    conf = config.read_spark_defaults(config.DEFAULT_SPARK_DEFAULTS)
    assert conf["spark.sql.shuffle.partitions"] == "1"
    assert conf["spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"] == "true"


@pytest.mark.spark
def test_the_default_jvm_options_reach_the_driver(spark):
    """The C1-only JIT setting must be a launch option of the JVM itself, not a conf value nobody reads."""
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    wanted = config.read_spark_defaults(config.DEFAULT_SPARK_DEFAULTS)["spark.driver.defaultJavaOptions"].split()
    assert set(wanted) <= set(runtime.getInputArguments())


def test_kafka_keys_pass_through_to_kafka_python():
    props = {"bootstrap.servers": "h:9092", "kafka.security.protocol": "SASL_SSL",
             "kafka.sasl.mechanism": "PLAIN", "kafka.request.timeout.ms": "5000", "topic.requests": "x"}
    assert config.client_config(config.kafka_options(props)) == {
        "bootstrap_servers": "h:9092", "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
        "request_timeout_ms": 5000}


def test_flags_must_be_key_value():
    assert config.parse_assignments(["a.b=1", "c= 2 "]) == {"a.b": "1", "c": "2"}
    with pytest.raises(ValueError):
        config.parse_assignments(["novalue"])


SECURED = {"bootstrap.servers": "h:9092", "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
           "kafka.sasl.plain.username": "coordinator", "kafka.sasl.plain.password": "secret",
           "kafka.ssl.cafile": "/etc/kafka/ca.pem", "kafka.ssl.check.hostname": "false"}


def test_kafka_client_is_not_a_kafka_python_setting():
    options = config.kafka_options({**SECURED, "kafka.client": "kafka-python"})
    assert "client" not in config.client_config(options)
    assert chosen_client(options) == "kafka-python"


def test_kafka_python_security_settings_map_to_librdkafkas_names():
    assert chosen_client(config.kafka_options(SECURED)) == "confluent"  # auto, with confluent-kafka installed
    assert confluent_config(config.client_config(config.kafka_options(SECURED))) == {
        "bootstrap.servers": "h:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "coordinator", "sasl.password": "secret", "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.endpoint.identification.algorithm": "none"}
    # kafka-python's default mechanism, which librdkafka's (GSSAPI) is not
    plain = {"bootstrap_servers": "h:9092", "security_protocol": "SASL_PLAINTEXT"}
    assert confluent_config(plain)["sasl.mechanism"] == "PLAIN"


def test_a_setting_librdkafka_cannot_take_falls_back_to_kafka_python_or_is_refused_by_name():
    options = config.kafka_options({**SECURED, "kafka.sasl.kerberos.domain.name": "example.com"})
    assert chosen_client(options) == "kafka-python"
    with pytest.raises(ValueError, match=r"kafka\.sasl\.kerberos\.domain\.name.*kafka\.client=kafka-python"):
        chosen_client({**options, "kafka.client": "confluent"})


def test_an_unknown_kafka_client_is_refused():
    with pytest.raises(ValueError, match="kafka.client must be one of auto, confluent, kafka-python"):
        chosen_client({"kafka.bootstrap.servers": "h:9092", "kafka.client": "java"})


def test_the_python_side_of_the_worker_handshake_waits_as_long_as_the_jvm():
    """`spark.python.authenticate.socketTimeout` (conf/spark-defaults.conf) in the seconds SPARK_AUTH_SOCKET_TIMEOUT
    takes (`streaming.query.spark_session` exports it)."""
    from streaming.query import _seconds

    assert [_seconds(v) for v in ("60s", "1500ms", "2m", "2min", "30")] == [60, 1, 120, 120, 30]
