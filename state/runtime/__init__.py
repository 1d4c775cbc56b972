"""The runtime every kind of group shares: how a request or a fired timer becomes records, responses and timer
operations, and how a group is rebuilt from its records.

- `step`: the one handler shape, (group, request, environment) -> `CoordinatorResult`, and how the step loop
  applies a result (`applied`) and a handler composes sub-results (`then`);
- `context`: one call's runtime for one group (`Context`), the result type (`CoordinatorResult`) and `replay`, the
  only code that changes a group;
- `coordinator`: the step over one group: fire the due timers, check a request, hand it to its kind's handler;
- `load`: a group rebuilt from its records (Kafka's load of `__consumer_offsets`);
- `timers`: the timer keys of both kinds and the timer operations (Kafka's CoordinatorTimer).
"""
