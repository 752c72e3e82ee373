"""Byte relay between a client's connection and the gRPC server's internal socket.

grpcio binds its own listening sockets and cannot adopt an accepted one, so the
front (`front`) hands an HTTP/2 connection to the gRPC server by relaying it: one
thread per direction, each blocked in `os.splice` (socket -> pipe -> socket, the
bytes never enter Python; the GIL is released while the kernel waits), with a
plain `recv_into`/`sendall` loop where `splice` is missing (not Linux). A direction
that reaches end of file half-closes its destination, as TCP does; an error on
either side ends both.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading

CHUNK = 1 << 20  # what one splice may move: a pipe resized to hold it (the Linux maximum)
_F_SETPIPE_SZ = 1031
_SPLICE = getattr(os, "splice", None)


def _pipe() -> tuple[int, int]:
    read_end, write_end = os.pipe()
    with contextlib.suppress(OSError):  # kept at the default 64 KiB where refused
        fcntl.fcntl(write_end, _F_SETPIPE_SZ, CHUNK)
    return read_end, write_end


def _splice_pump(src: socket.socket, dst: socket.socket) -> None:
    assert _SPLICE is not None
    splice = _SPLICE
    read_end, write_end = _pipe()
    src_fd, dst_fd = src.fileno(), dst.fileno()
    try:
        while True:
            n = splice(src_fd, write_end, CHUNK)
            if n == 0:
                return
            while n:
                n -= splice(read_end, dst_fd, n)
    finally:
        os.close(read_end)
        os.close(write_end)


def _copy_pump(src: socket.socket, dst: socket.socket) -> None:
    buffer = bytearray(256 * 1024)
    view = memoryview(buffer)
    while True:
        n = src.recv_into(buffer)
        if n == 0:
            return
        dst.sendall(view[:n])


_PUMP = _splice_pump if _SPLICE is not None else _copy_pump


def _pump(src: socket.socket, dst: socket.socket, done: threading.Event | None = None) -> None:
    """Move bytes until `src` ends (then half-close `dst`) or either side fails
    (then shut both down, which ends the other direction too); then set `done`."""
    try:
        _PUMP(src, dst)
    except OSError:  # reset, broken pipe, or shut down by the front's stop
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return
    else:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
    finally:
        if done is not None:
            done.set()


def relay(
    client: socket.socket, upstream: socket.socket, delivered: threading.Event | None = None
) -> None:
    """Relay until both directions end; closes neither socket (the caller does).
    `delivered` is set once the upstream side has ended and every byte it sent has
    been handed to the client (or the relay failed): the front's stop waits for it,
    so that the gRPC server's last answers are not cut off with the connection."""
    client.settimeout(None)  # splice needs blocking descriptors
    upstream.settimeout(None)
    back = threading.Thread(
        target=_pump, args=(upstream, client, delivered), name="localserver-relay", daemon=True
    )
    back.start()
    _pump(client, upstream)
    back.join()
