"""A connection to an upstream broker: requests written as they come, answers matched in order.

A Kafka broker answers the requests of one connection in the order it received them, so each client connection of
the gateway gets its own upstream connection and forwards its frames unchanged (its correlation ids included); the
answers come back in the same order and are handed back unread. The gateway's own requests (metadata, API
versions) use a connection of their own.
"""

from __future__ import annotations

import asyncio
import logging
import ssl as ssl_module
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import scramp

from gateway.protocol.frames import STREAM_BUFFER_BYTES, FrameError, correlation_id, framed, read_frame

log = logging.getLogger(__name__)

UPSTREAM_MAX_RESPONSE_BYTES = (1 << 31) - 1


@dataclass(frozen=True)
class UpstreamSecurity:
    """How the gateway reaches the brokers: TLS, and SASL (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) with the
    gateway's own credentials."""

    ssl: ssl_module.SSLContext | None = None
    sasl: tuple[str, str, str] | None = None
    """(mechanism, username, password)."""


class UpstreamClosed(ConnectionError):
    pass


class Upstream:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str) -> None:
        self.address = address
        self._reader, self._writer = reader, writer
        self._pending: deque[tuple[int, asyncio.Future]] = deque()
        self._next_id = 0
        self.closed = False
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(cls, host: str, port: int, security: UpstreamSecurity, timeout_s: float) -> "Upstream":
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=security.ssl, server_hostname=host if security.ssl else None,
                                    limit=STREAM_BUFFER_BYTES),
            timeout_s)
        upstream = cls(reader, writer, f"{host}:{port}")
        if security.sasl is not None:
            try:
                await asyncio.wait_for(upstream._authenticate(*security.sasl), timeout_s)
            except BaseException:
                upstream.close()
                raise
        return upstream

    def forward(self, frame: bytes, correlation: int, expect_response: bool) -> asyncio.Future | None:
        """Write a client's request frame as it is; the future gets the response payload (without its size)."""
        if self.closed:
            raise UpstreamClosed(f"upstream {self.address} is closed")
        future = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._pending.append((correlation, future))
        self._writer.writelines(framed(frame))
        return future

    def request_frame(self, frame_of: Callable[[int], bytes]) -> asyncio.Future:
        """One of the gateway's own requests, written by hand (`frame_of(correlation id)`: the frame, header
        included); the future gets the response payload (its header included)."""
        self._next_id += 1
        return self.forward(frame_of(self._next_id), self._next_id, True)

    async def request(self, message: Any, version: int, response_class: Any) -> Any:
        """One of the gateway's own requests (on a connection it does not share with a client)."""
        self._next_id += 1
        message.with_header(correlation_id=self._next_id, client_id="groupcoord-gateway")
        future = self.forward(bytes(message.encode(version=version, header=True)), self._next_id, True)
        payload = await future
        return response_class.decode(payload, version=version, header=True)

    async def _authenticate(self, mechanism: str, username: str, password: str) -> None:
        from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                         SaslHandshakeResponse)

        handshake = await self.request(SaslHandshakeRequest[1](mechanism=mechanism), 1, SaslHandshakeResponse)
        if handshake.error_code != 0:
            raise UpstreamClosed(f"upstream {self.address} refused SASL {mechanism}: error {handshake.error_code}")

        async def send(token: bytes) -> bytes:
            answer = await self.request(SaslAuthenticateRequest[1](auth_bytes=token), 1, SaslAuthenticateResponse)
            if answer.error_code != 0:
                raise UpstreamClosed(f"upstream {self.address} authentication failed: {answer.error_message}")
            return bytes(answer.auth_bytes)

        if mechanism == "PLAIN":
            await send(b"\0" + username.encode() + b"\0" + password.encode())
            return
        client = scramp.ScramClient([mechanism], username, password)
        try:
            client.set_server_first((await send(client.get_client_first().encode())).decode())
            client.set_server_final((await send(client.get_client_final().encode())).decode())
        except scramp.ScramException as exc:
            raise UpstreamClosed(f"upstream {self.address} SCRAM exchange failed: {exc}") from None

    async def _read_loop(self) -> None:
        reason: BaseException = UpstreamClosed(f"upstream {self.address} closed the connection")
        try:
            while True:
                payload = await read_frame(self._reader, UPSTREAM_MAX_RESPONSE_BYTES)
                if payload is None:
                    break
                if not self._pending:
                    raise FrameError(f"upstream {self.address} sent a response nobody asked for")
                expected, future = self._pending.popleft()
                if correlation_id(payload) != expected:
                    raise FrameError(f"upstream {self.address} answered {correlation_id(payload)}, "
                                     f"expected {expected}")
                if not future.done():
                    future.set_result(payload)
        except asyncio.CancelledError:
            reason = UpstreamClosed(f"upstream {self.address} closed")
        except (FrameError, OSError) as exc:
            reason = UpstreamClosed(f"upstream {self.address}: {exc}")
        finally:
            self.closed = True
            while self._pending:
                _, future = self._pending.popleft()
                if not future.done():
                    future.set_exception(reason)
            self._writer.close()

    def close(self) -> None:
        self.closed = True
        self._task.cancel()
        self._writer.close()
