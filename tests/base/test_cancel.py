"""The stop flag: per thread, raised at the next check, and inside a torch forward pass."""

from __future__ import annotations

import threading

import pytest

from htmlrag_chat.base.cancel import Cancelled, StopFlag, check, make_stoppable, watching
from tests.stopping import stop_when


def test_check_without_a_flag_does_nothing():
    check()


def test_a_set_flag_raises_at_the_next_check_of_its_own_thread_only():
    flag = StopFlag()
    with watching(flag):
        check()
        flag.set()
        with pytest.raises(Cancelled):
            check()
        other: list[BaseException] = []

        def elsewhere() -> None:  # another thread watches no flag
            try:
                check()
            except BaseException as error:
                other.append(error)

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        assert other == []
    check()  # the flag is gone with the block


def test_a_model_made_stoppable_stops_inside_its_forward_pass():
    import torch

    torch.manual_seed(0)
    model = make_stoppable(torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(400)]))
    layers_run = 0

    def count(module: torch.nn.Module, args: object) -> None:
        nonlocal layers_run
        layers_run += 1

    for layer in model:  # after the stop's own hook: a layer is counted once it passed
        layer.register_forward_pre_hook(count)
    x = torch.randn(512, 256)
    assert model(x).shape == (512, 256)  # outside a question: nothing stops it
    layers_run = 0

    def forever() -> None:
        while True:
            model(x)

    stopped = stop_when(forever, lambda: layers_run > 10, lambda: layers_run)
    assert isinstance(stopped.raised, Cancelled)
    assert stopped.after <= 1  # the layer under way at most, of a 400-layer pass
