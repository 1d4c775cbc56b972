"""The coordinator core: Kafka's classic group coordinator as a pure function of (state, requests, now).

No Spark, no Kafka client, no clock. `state.api` is its public face: the Spark job (`streaming/`) and the gateway
import the core from there only, and `state.batch.step_group` is the call a micro-batch makes per group.

What every kind of group shares is at the top (`records`, `offset_values`, `wire`, `rules`, `config`, `errors`,
`offsets/`, `views/`, `topics/`, the one handler shape and the timers in `handling/`, the runtime's replay, load
and dispatch over the kinds in `runtime/`, the step loop in `batch`); each kind of group has a package of its own
with the same parts under the same names: `classic/`, `consumer/`, `share/`, each with `group`, `records`,
`replay`, `handlers`, `describe` and `view`. The kinds stand on `handling/` and the top-level modules below them;
`offsets/`, `views/` and `runtime/`, above them, are what knows every kind.
"""
