"""The coordinator core: Kafka's classic group coordinator as a pure function of (state, requests, now).

No Spark, no Kafka client, no clock. `state.api` is its public face: the Spark job (`streaming/`) and the gateway
import the core from there only, and `state.batch.step_group` is the call a micro-batch makes per group.
"""
