"""The runtime every kind of group shares: how a request or a fired timer becomes records, responses and timer
operations, and how a group is rebuilt from its records.

- `step`: the one handler shape, (group, request, environment) -> `CoordinatorResult`, and how the step loop
  applies a result (`applied`) and a handler composes sub-results (`then`);
- `replay`: `replay(group, record)`, the only code that changes a group (a written record by its key, an in-memory
  one by its kind's replay: `state.classic.replay`, `state.consumer.replay`);
- `coordinator`: the handlers by API, and what the step loop (`state.batch`) calls: fire the due timers, check a
  request and hand it to its handler, sync the directory;
- `directory`: the directory sync after each handler and timer (the record ListGroups' directory follows);
- `load`: a group rebuilt from its records (Kafka's load of `__consumer_offsets`);
- `timers`: the timer keys of both kinds and the timer operations (Kafka's CoordinatorTimer).
"""
