"""The runtime over every kind of group: how a record of any group is replayed, how a group is loaded, and which
kind's handler a request or a fired timer goes to. It stands above the kinds (`state.classic`, `state.consumer`,
`state.share`) and the offsets (`state.offsets`), which are written in the one handler shape (`state.handling`).

- `replay`: `replay(group, record)`, sending each record to its kind's replay (the only code that changes a group),
  and `applied`/`then` with it, how the step loop takes a result;
- `coordinator`: the handlers by API, and what the step loop (`state.batch`) calls: fire the due timers, check a
  request and hand it to its handler, sync the directory;
- `directory`: the directory sync after each handler and timer (the record ListGroups' directory follows);
- `load`: a group rebuilt from its records (Kafka's load of `__consumer_offsets`).
"""
