"""How the job's Spark processes start and run: the driver JVM's class-data-sharing archive and its filtered
standard error, and the Python workers' heap kept cheap to collect.

Apart from the query because none of it is the coordinator's logic: each module works around a cost or a noise of
Spark's own processes (a slow JVM start, start-up notices, a full collection after every task), measured in
docs/operations-streaming.md; removing one changes speed or output, never an answer.
"""
