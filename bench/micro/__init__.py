"""Micro-benchmarks with no broker and no Spark: the core's step, the message codec, the assignors."""
