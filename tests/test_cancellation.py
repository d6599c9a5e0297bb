"""A cancelled task stops: no shipped code waits through ``asyncio.wait_for``.

On Python 3.11, ``asyncio.wait_for`` returns the awaited result when the task is
cancelled in the same loop iteration as that result arrives: the cancellation is lost.
The agent loop waited for its next chat event that way, so a worker cancelled just as
an event came kept serving for ever and its owner's shutdown (``serve()``, a test's
``gather``) never returned. ``async with asyncio.timeout(...)`` keeps the cancellation;
the service and the kit use only that.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = [ROOT / "gql", ROOT / "store", ROOT / "clients" / "python" / "src"]


def _wait_for_calls() -> list[str]:
    found = []
    for folder in SHIPPED:
        for path in sorted(folder.rglob("*.py")):
            if "static" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "wait_for"
                        and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == "asyncio"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_shipped_code_waits_through_wait_for() -> None:
    assert _wait_for_calls() == [], (
        "asyncio.wait_for loses a cancellation on Python 3.11; use "
        "`async with asyncio.timeout(...)`")


async def _cancelled_as_it_arrives(wait: Callable[[asyncio.Queue[int]], Awaitable[None]]
                                   ) -> bool:
    """Whether a task waiting with ``wait`` stops when cancelled in the same loop
    iteration as the item it waits for arrives."""
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def serve() -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await wait(queue)

    task = asyncio.create_task(serve())
    await asyncio.sleep(0.01)
    queue.put_nowait(1)
    task.cancel()
    await asyncio.sleep(0.05)
    stopped = task.done()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return stopped


async def _with_timeout(queue: asyncio.Queue[int]) -> None:
    async with asyncio.timeout(5):
        await queue.get()


async def _with_wait_for(queue: asyncio.Queue[int]) -> None:
    await asyncio.wait_for(queue.get(), 5)


async def test_a_timeout_block_keeps_the_cancellation() -> None:
    assert await _cancelled_as_it_arrives(_with_timeout)


@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="wait_for keeps the cancellation from Python 3.12")
async def test_wait_for_loses_it_on_this_python() -> None:
    """Pins the reason for the rule above: when this starts to pass, the rule may go."""
    assert not await _cancelled_as_it_arrives(_with_wait_for)
