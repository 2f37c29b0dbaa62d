"""A TCP relay on 127.0.0.1 in front of a server, that can freeze: it keeps every connection open and stops
passing bytes either way, which is what a client sees of a server stopped with SIGSTOP (its kernel still holds
the connections; nothing answers)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator


class FreezableRelay:
    """Relays each connection to 127.0.0.1:`target_port` while `frozen` is False."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.frozen = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
                self._sockets += [client, upstream]
                for source, target in ((client, upstream), (upstream, client)):
                    threading.Thread(target=self._pass, args=(source, target), daemon=True).start()

    def _pass(self, source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                while self.frozen:
                    time.sleep(0.01)
                target.sendall(data)

    def close(self) -> None:
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@contextlib.contextmanager
def relay(target_port: int) -> Iterator[FreezableRelay]:
    relaying = FreezableRelay(target_port)
    try:
        yield relaying
    finally:
        relaying.close()
