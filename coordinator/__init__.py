"""The `coordinator` command (`run`, `upgrade`, `gateway`) and its spark-submit entry: the one place that composes
the Spark job (`streaming/`) and the gateway (`gateway/`), which import neither each other nor this package.

`coordinator run` on the embedded default starts a gateway beside the job (`gateway.front.process`);
`coordinator gateway` is the gateway's own command line (`gateway.front.cli`, also `python -m gateway`). What both
need is in `common/`.
"""
