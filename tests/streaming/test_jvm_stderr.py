"""The driver JVM's stderr copy: the two start-up notices go, everything else passes byte for byte (a real pipe, no
Spark)."""

from __future__ import annotations

import os

from streaming.spark_runtime.jvm_stderr import copy_filtered

PYSPARK_PRINTS = (
    b"Starting Streaming TransformWithStateInPandas Python worker.\n\n"
    b"Streaming TransformWithStateInPandas Python worker finish init stage of Python runner. Received UDF from JVM: "
    b"<bound method f of <object at 0x7f>>, received return type of UDF: StructType([StructField('kind', "
    b"StringType(), True)]).\n\n"
    b"Streaming TransformWithStateInPandas Python worker Completed execution of UDF: <bound method f>.\n\n"
)


def copied(data: bytes) -> bytes:
    source_r, source_w = os.pipe()
    target_r, target_w = os.pipe()
    os.write(source_w, data)
    os.close(source_w)
    with os.fdopen(source_r, "rb") as source:
        copy_filtered(source, target_w)
    os.close(target_w)
    with os.fdopen(target_r, "rb") as target:
        return target.read()


def test_the_notices_and_their_blank_lines_go():
    spark_log = b"2026-11-25T13:54:46.310+0000 INFO ResolveWriteToStream: Checkpoint root resolved.\n"
    data = b"WARNING: Using incubator modules: jdk.incubator.vector\n" + spark_log + PYSPARK_PRINTS + spark_log
    assert copied(data) == spark_log + spark_log


def test_everything_else_passes_unchanged():
    data = (b"2026-11-25T13:56:24.252+0000 ERROR TaskSetManager: Task 0 in stage 3.0 failed 8 times\n"
            b"Traceback (most recent call last):\n  File \"worker.py\", line 1\n\n"
            b"WARNING: Using incubator modules: jdk.incubator.vector, jdk.incubator.foreign\n"
            b"a line a Python worker printed, without a newline at the end")
    assert copied(data) == data
