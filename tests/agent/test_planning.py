"""A first question's plan beside its search: stopping it never swallows the question's
own stop."""

from __future__ import annotations

import asyncio

import pytest

from htmlrag_chat.agent.planning import SidePlan


def test_a_question_stopped_while_its_plan_stops_is_still_stopped() -> None:
    """Ctrl+C landing while ``stop`` waits for the plan's stream to close: the question's
    task is cancelled, and ``stop`` must raise, not return as if the plan alone had ended
    (the research then answered its second part to the end and exited 0)."""

    async def closing_slowly() -> tuple[str, ...]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)  # its stream closing
        return ()

    async def main() -> None:
        plan = SidePlan(asyncio.ensure_future(closing_slowly()))
        await asyncio.sleep(0)
        question = asyncio.ensure_future(plan.stop())
        await asyncio.sleep(0.05)  # the question waits in ``stop``
        question.cancel()
        with pytest.raises(asyncio.CancelledError):
            await question

    asyncio.run(main())


def test_stopping_a_plan_alone_is_no_error() -> None:
    async def main() -> tuple[str, ...]:
        plan = SidePlan(asyncio.ensure_future(asyncio.Event().wait()))  # type: ignore[arg-type]
        await asyncio.sleep(0)
        await plan.stop()
        return plan.in_time()

    assert asyncio.run(main()) == ()
