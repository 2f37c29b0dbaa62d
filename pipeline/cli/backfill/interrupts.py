"""Ctrl-C (SIGINT) and SIGTERM during `pmw backfill`: the first abandons the running partition's current table at
once and stops the backfill, so that a second has nothing left to cut short.

Dagster's in-process run of a partition records an interrupt (both signals alike) while its own code runs and
raises it inside the running step, at once or as the next step starts; the step's table is abandoned (the lake
publishes a file whole, by rename, or not at all), the run fails and Dagster restores the handlers it found.
Left alone, the backfill would take that for a failed partition and go on to the next; and a signal that came
while Dagster prepared a run, outside its handlers, ended the process with a traceback. So the backfill runs
inside `Interrupts`, which holds Dagster's own recording handler around the whole loop (as Dagster advises for
a process that executes runs): a signal between runs is then raised in the next run's first step. Which signal
came is read from the wakeup fd (`signal.set_wakeup_fd`), where Python notes the number of every signal it
handles, whoever's handler runs: Dagster's handles both alike.
"""

from __future__ import annotations

import signal
import socket
import threading
from contextlib import ExitStack
from types import TracebackType

from dagster._utils.interrupts import capture_interrupts  # not exported: the handler whose records runs raise

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """The interrupts received while the context is open: `requested` is the first signal, or None.

    Outside the main thread (where Python runs every handler) it records nothing and changes nothing."""

    def __init__(self) -> None:
        self.received: list[signal.Signals] = []
        self._open = ExitStack()
        self._reader: socket.socket | None = None

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is not threading.main_thread():
            return self
        reader, writer = (self._open.enter_context(end) for end in socket.socketpair())
        reader.setblocking(False)
        writer.setblocking(False)
        previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self._open.callback(signal.set_wakeup_fd, previous_fd)
        self._open.callback(signal.signal, signal.SIGTERM, signal.getsignal(signal.SIGTERM))  # Dagster's capture
        self._open.enter_context(capture_interrupts())  # leaves SIGTERM mapped to the SIGINT handler
        self._reader = reader
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._reader = None
        self._open.close()

    @property
    def requested(self) -> signal.Signals | None:
        """The first interrupt received so far, or None."""
        if self._reader is not None:
            try:
                notes = self._reader.recv(4096)
            except BlockingIOError:
                notes = b""
            self.received.extend(signal.Signals(number) for number in notes if number in SIGNALS)
        return self.received[0] if self.received else None


def exit_status(number: signal.Signals) -> int:
    """The shell's convention for a process ended by a signal: 128 + the signal's number (130, 143)."""
    return 128 + number
