"""Which process holds the server end of a loopback TCP connection (Linux /proc): the tests of a gateway of several
processes pick connections that land on the process they want."""

from __future__ import annotations

import os
import socket


def _hex_address(port: int) -> str:
    """127.0.0.1:port as /proc/net/tcp writes it (the address little-endian, the port big-endian)."""
    return f"0100007F:{port:04X}"


def server_owner(client: socket.socket, pids: list[int]) -> int | None:
    """The process among `pids` whose socket is the server end of the loopback connection `client`."""
    here, there = client.getsockname()[1], client.getpeername()[1]
    inode = None
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[1] == _hex_address(there) and fields[2] == _hex_address(here):
                inode = fields[9]
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        return pid
                except OSError:
                    continue
        except OSError:
            continue
    return None


def children(pid: int) -> list[int]:
    """The live child processes of `pid`."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rpartition(")")[2].split()[1]) == pid:
                        out.append(int(entry))
            except OSError:
                continue
    return out
