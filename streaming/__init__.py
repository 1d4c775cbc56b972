"""The Spark Structured Streaming job around the coordinator core. No protocol decisions live here.

At the top, the query (`query`: source -> route -> one state call per bucket of groups -> `noop`) and what runs in
its state call (`stateful`, `buckets`, `directory`); beside it, by job: `group_stores` (how groups are kept in
Spark state), `kafka_io` (the source, the sink, the timers topic, the Kafka clients, the embedded broker),
`recovery` (one driver per checkpoint, checkpoint checks, upgrade, rebuild), `monitoring` (metrics, Prometheus,
the console) and `spark_runtime` (the JVM's class archive and stderr, the workers' heap). The `coordinator`
command that runs it is `coordinator/`; what it shares with the gateway is `common/`.
"""
