"""Sections run by the entry benchmarks: the gateway's fast path (`bench.gateway_bench`) and a group's rebalances
step by step (`bench.rebalance_bench steps`), and the peers both rebalance benchmarks measure (`rebalance_peers`)."""
