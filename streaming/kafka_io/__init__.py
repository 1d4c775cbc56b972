"""The job's Kafka reads and writes: the requests source, the output sink, the timers topic, the clients under them
(kafka-python, or librdkafka on the hot path), and the embedded tansu broker of the local default and the tests.

Apart from the query because it is transport: how bytes reach the state calls and leave them, with which client
library, never what a request means (that is the core's) nor how a group is stored (`streaming.group_stores`).
"""
