"""What the running job tells its operator: a metrics line per micro-batch, the Prometheus endpoint, the console's
group changes and summary, and the driver's view of the groups they are made from (`group_watch`).

Apart from the query because it only watches: a `StreamingQueryListener` on the driver and a reader of the records
topic, off the batch's path, so nothing here can change an answer or slow a batch down.
"""
