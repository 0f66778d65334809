"""How far work running in another thread gets once it is told to stop.

Counted in units of the work itself (layers, model calls, batches), never in seconds: a
stop checked before every unit lets at most the unit under way finish, however slow or
loaded the machine, while a stop that is not checked lets the work run on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from htmlrag_chat.base.cancel import StopFlag, watching


@dataclass
class Stopped:
    raised: BaseException | None  # what the work ended with (None: it finished)
    after: int  # units of work counted after the flag was set


def stop_when(
    work: Callable[[], object], started: Callable[[], bool], progress: Callable[[], int]
) -> Stopped:
    """Run ``work`` in a thread watching a fresh flag, set the flag once ``started()`` says
    the work is under way, and count how far ``progress()`` goes on after that."""
    flag = StopFlag()
    raised: list[BaseException] = []
    ended = threading.Event()

    def run() -> None:
        try:
            with watching(flag):
                work()
        except BaseException as error:  # reported to the test
            raised.append(error)
        ended.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not started() and not ended.is_set():
        assert time.monotonic() < deadline, "the work never started"
        time.sleep(0.01)
    flag.set()
    at_stop = progress()  # read once the flag is set: what comes after, came after it
    thread.join(120)
    assert not thread.is_alive(), "the work did not stop"
    return Stopped(raised[0] if raised else None, progress() - at_stop)


class CountedCalls:
    """Counts calls of a model's method (patched in by the test): how a test knows the model
    has started, and how far it went, from any thread."""

    def __init__(self, method: Callable[..., object]) -> None:
        self.method = method
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, *args: object) -> object:
        with self._lock:
            self.calls += 1
        return self.method(*args)
