"""What the Spark job (`streaming/`) and the gateway (`gateway/`) both need, so that neither imports the other.

The configuration every process reads (`config`: conf/coordinator.properties, overrides, the `kafka.*` client
settings), the Python log's format (`logs`), the coordinator's topics, created and checked before use (`topics`),
child processes that die with their parent (`processes`), where a partition's log ends as fetch responses say it
(`log_ends`), and kafka-python's client settings as librdkafka's (`librdkafka_config`). It imports the core's
`state.api` and libraries only, never `streaming/` or `gateway/`; the `coordinator` command (`coordinator/`) is the
one place that composes the two.
"""
