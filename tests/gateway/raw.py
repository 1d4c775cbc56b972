"""A raw Kafka connection for the gateway tests: kafka-python's message classes over a plain socket."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)


def address(servers: str) -> tuple[str, int]:
    host, _, port = servers.rpartition(":")
    return host, int(port)


class Connection:
    """A raw Kafka connection: requests out, responses in, in order."""

    def __init__(self, servers: str) -> None:
        self.sock = socket.create_connection(address(servers), timeout=30)
        self.next_id = 0

    def send(self, request: Any, version: int) -> int:
        self.next_id += 1
        request.with_header(correlation_id=self.next_id, client_id="gateway-test")
        self.sock.sendall(request.encode(version=version, header=True, framed=True))
        return self.next_id

    def receive(self, response_class: Any, version: int) -> Any:
        size = struct.unpack(">i", self.read(4))[0]
        return response_class.decode(self.read(size), version=version, header=True)

    def call(self, request: Any, version: int, response_class: Any) -> Any:
        self.send(request, version)
        return self.receive(response_class, version)

    def read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            data += chunk
        return data

    def closed_by_peer(self, timeout_s: float = 10.0) -> bool:
        self.sock.settimeout(timeout_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def login(servers: str, username: str, password: str) -> Connection:
    """A connection authenticated with SASL/PLAIN (handshake v1, then SaslAuthenticate)."""
    connection = Connection(servers)
    handshake = connection.call(SaslHandshakeRequest[1](mechanism="PLAIN"), 1, SaslHandshakeResponse)
    assert (handshake.error_code, handshake.mechanisms) == (0, ["PLAIN"])
    answer = connection.call(SaslAuthenticateRequest[1](auth_bytes=f"\0{username}\0{password}".encode()), 1,
                             SaslAuthenticateResponse)
    assert answer.error_code == 0, answer
    return connection
