"""What the Spark job (`streaming/`) and the gateway (`gateway/`) both need, so that neither imports the other.

The configuration every process reads (`config`: conf/coordinator.properties, overrides, the `kafka.*` client
settings), the Python log's format (`logs`), the coordinator's topics, created and checked before use (`topics`),
and child processes that die with their parent (`processes`). It imports the core's `state.api` and libraries only,
never `streaming/` or `gateway/`; the `coordinator` command (`coordinator/`) is the one place that composes the two.
"""
