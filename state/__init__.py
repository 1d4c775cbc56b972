"""The coordinator core: Kafka's classic group coordinator as a pure function of (state, requests, now).

No Spark, no Kafka client, no clock. `state.batch` is the entry point the Spark shell calls.
"""
