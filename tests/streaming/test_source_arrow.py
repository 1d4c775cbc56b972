"""The source's Arrow batches: PySpark takes them only when their schema equals the Spark schema's Arrow form."""

from __future__ import annotations

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (BinaryType, BooleanType, IntegerType, LongType, StringType, StructField,
                               StructType)

from streaming.kafka_io.source import RAW_ARROW, RAW_SCHEMA, ROUTED_ARROW, ROUTED_SCHEMA, record_batches

_TYPES = {"INT": IntegerType(), "LONG": LongType(), "BINARY": BinaryType(), "STRING": StringType(),
          "BOOLEAN": BooleanType()}


def spark_schema(ddl: str) -> StructType:
    return StructType([StructField(name, _TYPES[kind]) for name, kind in (f.split() for f in ddl.split(", "))])


def test_the_arrow_schemas_are_what_pyspark_derives_from_the_declared_schemas():
    assert to_arrow_schema(spark_schema(RAW_SCHEMA), timezone="UTC").equals(RAW_ARROW)
    assert to_arrow_schema(spark_schema(ROUTED_SCHEMA), timezone="UTC").equals(ROUTED_ARROW)


def test_rows_become_batches_of_columns_with_nulls_kept():
    rows = [(0, i, 1_000 + i, None if i % 2 else b"k", b"v%d" % i) for i in range(5)]
    batches = list(record_batches(iter(rows), RAW_ARROW, size=2))
    assert [b.num_rows for b in batches] == [2, 2, 1]
    assert all(b.schema.equals(RAW_ARROW) for b in batches)
    assert [tuple(r.values()) for b in batches for r in b.to_pylist()] == rows


def test_no_rows_give_no_batches():
    assert list(record_batches(iter([]), RAW_ARROW)) == []
