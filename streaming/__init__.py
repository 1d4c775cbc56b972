"""The Spark Structured Streaming shell around the coordinator core: Kafka source and sinks, the
applyInPandasWithState adapter, the query and its CLI. No protocol decisions live here."""
