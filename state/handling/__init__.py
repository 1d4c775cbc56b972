"""The one handler shape every kind of group is written in, and its timers: what the kinds stand on.

- `step`: a handler is (group, request, environment) -> `CoordinatorResult`; how a result is applied (`applied`)
  and how a handler composes sub-results (`then`), each with the replay it is given (a kind's handlers pass their
  kind's: `state.classic.replay.then`; the runtime passes the one over every kind: `state.runtime.replay`);
- `timers`: the timer keys of every kind and the timer operations (Kafka's CoordinatorTimer).
"""
