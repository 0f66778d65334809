"""Measuring how fast a stop reaches work running in another thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from htmlrag_chat.base.cancel import StopFlag, watching


@dataclass
class Stopped:
    raised: BaseException | None  # what the work ended with (None: it finished)
    seconds: float  # from setting the flag to the thread's end


def stop_when(work: Callable[[], object], started: Callable[[], bool]) -> Stopped:
    """Run ``work`` in a thread watching a fresh flag, set the flag once ``started()`` says
    the work is under way, and time how long the thread takes to end after that."""
    flag = StopFlag()
    raised: list[BaseException] = []
    ended: list[float] = []

    def run() -> None:
        try:
            with watching(flag):
                work()
        except BaseException as error:  # reported to the test
            raised.append(error)
        ended.append(time.perf_counter())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not started() and not ended:
        assert time.monotonic() < deadline, "the work never started"
        time.sleep(0.01)
    stopped_at = time.perf_counter()
    flag.set()
    thread.join(30)
    assert not thread.is_alive(), "the work did not stop"
    return Stopped(raised[0] if raised else None, ended[0] - stopped_at)


class CountedCalls:
    """Counts calls of a model's ``forward`` (patched in by the test): how a test knows
    the model has started, from any thread."""

    def __init__(self, forward: Callable[..., object]) -> None:
        self.forward = forward
        self.calls = 0

    def __call__(self, *args: object) -> object:
        self.calls += 1
        return self.forward(*args)
