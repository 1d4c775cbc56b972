"""Pipelined `MapState` access: many state requests per round trip to the JVM instead of one each.

Every `MapState` call of PySpark's `transformWithState` is a request on the worker's socket to the task's state
server in the JVM, answered before the next one is sent. At 0.1 ms or more a round trip (far more when the two
cores are busy and each answer waits for the JVM thread and then for the Python worker to be scheduled), a bucket
call that reads and writes a few hundred groups spent most of its time waiting (py-spy: 42% of the state task's
samples in `getValue` and `updateValue`, 2026-11-25).

The state server handles requests strictly in order, one after the other, and answers each (Spark's
`TransformWithStateInPySparkStateServer`), so requests can be written back to back and their answers read
afterwards:

- `PipelinedMap.getValues` writes the reads of many keys, then reads their answers (in chunks, so the unread
  requests always fit the socket's buffers);
- `updateValue` and `removeKey` are written and not waited for; their answers are read (and checked) before the
  next read, and by `StatePipe.drain`, which the call runs before it returns to Spark.

Since the order on the socket is the order of execution, a read always sees the writes made before it.

This writes PySpark's own messages with PySpark's own serialisation, through attributes that are not public API
(`StatefulProcessorApiClient`, PySpark 4.3); `StatePipe.of` returns None when they are not there, and the caller
then uses the `MapState` as it is.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Iterable, Iterator, Sequence

from pyspark.serializers import write_int

CHUNK = 64
"""Reads written before their answers are read: small requests, so they fit the socket buffers whatever the size
of the answers (the JVM stops reading while it cannot write an answer)."""
MAX_PENDING = 1024
"""Writes not yet acknowledged: their answers are a few bytes each."""


class StatePipe:
    """One worker's connection to the task's state server, shared by the processor's state variables."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._pending = 0

    @classmethod
    def of(cls, handle: Any) -> "StatePipe | None":
        client = getattr(handle, "_statefulProcessorApiClient", None)
        needed = ("sockfile", "_serialize_to_bytes", "_deserialize_from_bytes", "_receive_proto_message")
        return cls(client) if client is not None and all(hasattr(client, n) for n in needed) else None

    def serialize(self, schema: Any, values: tuple) -> bytes:
        return self._client._serialize_to_bytes(schema, values)

    def send(self, message: bytes) -> None:
        """Write a request whose answer is only a status (an update, a removal); it is checked later."""
        self._write(message)
        self._pending += 1
        if self._pending >= MAX_PENDING:
            self.drain()

    def ask(self, messages: Sequence[bytes]) -> list[bytes]:
        """Write requests and return their answers' values, in order."""
        self.drain()
        out: list[bytes] = []
        requests = iter(messages)
        while chunk := list(islice(requests, CHUNK)):
            for message in chunk:
                self._write(message)
            self._client.sockfile.flush()
            for _ in chunk:
                out.append(self._answer())
        return out

    def drain(self) -> None:
        """Wait for every written update's answer; raise if one failed."""
        if not self._pending:
            return
        self._client.sockfile.flush()
        pending, self._pending = self._pending, 0
        for _ in range(pending):
            self._answer()

    def value(self, raw: bytes) -> tuple | None:
        return None if not raw else self._client._deserialize_from_bytes(raw)

    def _write(self, message: bytes) -> None:
        sockfile = self._client.sockfile
        write_int(0, sockfile)  # the message version, as PySpark writes it
        write_int(len(message), sockfile)
        sockfile.write(message)

    def _answer(self) -> bytes:
        status, error, value = self._client._receive_proto_message()
        if status != 0:
            raise RuntimeError(f"state request failed in the JVM: {error}")
        return value


class PipelinedMap:
    """A `MapState` whose reads of many keys cost one round trip and whose writes are not waited for."""

    def __init__(self, state: Any, pipe: StatePipe) -> None:
        client = state._mapStateClient
        self._state, self._name, self._pipe = state, state._stateName, pipe
        self._key_schema, self._value_schema = client.user_key_schema, client.value_schema

    def getValue(self, key: tuple) -> tuple | None:
        return self.getValues([key])[0]

    def getValues(self, keys: Iterable[tuple]) -> list[tuple | None]:
        from pyspark.sql.streaming.proto import StateMessage_pb2 as m

        requests = [self._call(getValue=m.GetValue(userKey=self._pipe.serialize(self._key_schema, key)))
                    for key in keys]
        return [self._pipe.value(raw) for raw in self._pipe.ask(requests)]

    def keys(self) -> Iterator[tuple]:
        """Every key, through PySpark's own iterator (a rare call: a retention recheck's), once the writes sent
        before it are answered."""
        self._pipe.drain()
        return self._state.keys()

    def updateValue(self, key: tuple, value: tuple) -> None:
        from pyspark.sql.streaming.proto import StateMessage_pb2 as m

        self._pipe.send(self._call(updateValue=m.UpdateValue(userKey=self._pipe.serialize(self._key_schema, key),
                                                             value=self._pipe.serialize(self._value_schema, value))))

    def removeKey(self, key: tuple) -> None:
        from pyspark.sql.streaming.proto import StateMessage_pb2 as m

        self._pipe.send(self._call(removeKey=m.RemoveKey(userKey=self._pipe.serialize(self._key_schema, key))))

    def _call(self, **call: Any) -> bytes:
        from pyspark.sql.streaming.proto import StateMessage_pb2 as m

        request = m.StateRequest(stateVariableRequest=m.StateVariableRequest(
            mapStateCall=m.MapStateCall(stateName=self._name, **call)))
        return request.SerializeToString()
