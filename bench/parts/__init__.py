"""Sections run by the entry benchmarks: the gateway's fast path (`bench.gateway_bench`) and a group's rebalances
step by step (`bench.rebalance_bench steps`)."""
