"""Issue 34, item 3 (concurrent log-ins): the hashing pool (classroom/hash_pool.py) is bounded and fair.

An anonymous flood of log-ins made a real one wait 12.9 s (every hash queued in one unbounded line), and 80
joins hashed in the request threads stalled every page. Here, in-process, the pool's own promises with real
work on its real threads: the queue is bounded per address and in all (PoolFull with a Retry-After, never an
unbounded pile-up); addresses take turns; an address whose requests keep being refused is served after the
others; a request whose client went away is not worked on. The same over HTTP against a real server with a
real argon2 cost: tests/test_login_flood.py."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tritonlab.classroom import hash_pool
from tritonlab.classroom.hash_pool import HashPool, PoolFull


class Gate:
    """Work that waits until the test lets it go, recording the order it ran in."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.ran: list[str] = []
        self.started = threading.Event()

    def __call__(self, label: str) -> str:
        self.started.set()
        self.go.wait(30)
        self.ran.append(label)
        return label


async def submit(pool: HashPool, address: str, work, label: str) -> asyncio.Task:  # noqa: ANN001
    task = asyncio.ensure_future(pool.run(address, work, label))
    await asyncio.sleep(0)  # let it queue
    return task


def test_the_queue_is_bounded_per_address_and_in_all() -> None:
    async def main() -> None:
        pool = HashPool(workers=1, max_waiting=6, per_address=4)
        gate = Gate()
        busy = await submit(pool, "a", gate, "a0")  # taken by the worker
        await asyncio.get_running_loop().run_in_executor(None, gate.started.wait, 10)
        queued = [await submit(pool, "a", gate, f"a{i}") for i in range(1, 5)]
        with pytest.raises(PoolFull) as over:
            await pool.run("a", gate, "a5")
        assert over.value.retry_after >= 1 and "your address" in str(over.value)
        queued += [await submit(pool, "b", gate, "b0"), await submit(pool, "c", gate, "c0")]
        with pytest.raises(PoolFull) as full:
            await pool.run("d", gate, "d0")
        assert "in all" in str(full.value) and pool.waiting == 6
        gate.go.set()
        assert await busy == "a0"
        assert [await t for t in queued] == ["a1", "a2", "a3", "a4", "b0", "c0"]
        assert pool.waiting == 0

    asyncio.run(main())


def test_addresses_take_turns() -> None:
    """Eight queued from a flooding address, then one from a learner: the learner's comes after one more of
    the flood's, not after all eight."""

    async def main() -> None:
        pool = HashPool(workers=1)
        gate = Gate()
        first = await submit(pool, "flood", gate, "f0")
        await asyncio.get_running_loop().run_in_executor(None, gate.started.wait, 10)
        rest = [await submit(pool, "flood", gate, f"f{i}") for i in range(1, 9)]
        learner = await submit(pool, "learner", gate, "learner")
        gate.go.set()
        await asyncio.gather(first, learner, *rest)
        assert gate.ran[:3] == ["f0", "f1", "learner"], gate.ran  # one flood turn, then the learner's

    asyncio.run(main())


def test_an_address_refused_again_and_again_is_served_after_the_others() -> None:
    async def main() -> None:
        pool = HashPool(workers=1)
        for _ in range(hash_pool.FLAGGED_AFTER):
            pool.refused("flood")
        assert pool.flagged("flood") and not pool.flagged("class")
        gate = Gate()
        first = await submit(pool, "other", gate, "o0")
        await asyncio.get_running_loop().run_in_executor(None, gate.started.wait, 10)
        flood = [await submit(pool, "flood", gate, f"f{i}") for i in range(6)]
        clean = [await submit(pool, f"class{i}", gate, f"c{i}") for i in range(6)]
        gate.go.set()
        await asyncio.gather(first, *flood, *clean)
        order = gate.ran[1:]
        # while both wait, the flagged address gets one turn in CLEAN_TURNS + 1
        assert order[: hash_pool.CLEAN_TURNS] == ["c0", "c1", "c2"] and order[3] == "f0", order
        assert order.index("c5") < order.index("f3"), order  # never starved either: f1 came before c5

    asyncio.run(main())


def test_a_request_whose_client_left_is_not_worked_on() -> None:
    async def main() -> None:
        pool = HashPool(workers=1)
        gate = Gate()
        first = await submit(pool, "a", gate, "a0")
        await asyncio.get_running_loop().run_in_executor(None, gate.started.wait, 10)
        gone = await submit(pool, "b", gate, "gone")
        kept = await submit(pool, "c", gate, "kept")
        gone.cancel()
        await asyncio.sleep(0)
        assert pool.waiting == 1
        gate.go.set()
        assert await first == "a0" and await kept == "kept"
        assert "gone" not in gate.ran

    asyncio.run(main())


def test_errors_reach_the_waiting_request() -> None:
    async def main() -> None:
        pool = HashPool(workers=1)

        def refuse() -> None:
            raise ValueError("wrong password")

        with pytest.raises(ValueError, match="wrong password"):
            await pool.run("a", refuse)
        assert await pool.run("a", lambda: 42) == 42

    asyncio.run(main())
