"""How long one argon2id password check takes on this machine, for the costs a class might use.

Prints, per cost (t passes, m KiB, p lanes), the fastest and the median of N `verify` calls, one at a time, and
the machine's load average before and after (the figures are only as quiet as the machine was). The class's
cost is config.ARGON2_DEFAULT; why it is what it is: docs/classroom.md ("Password hashing cost").

    python benchmarks/argon2_cost.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

COSTS = (
    (3, 65536, 4),  # RFC 9106's low-memory choice, argon2-cffi's default (tritonlab's default until issue 34)
    (2, 32768, 1),
    (2, 19456, 1),  # OWASP's minimum
    (1, 47104, 1),  # OWASP's other minimum
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="verify calls per cost (default 15)")
    args = parser.parse_args()
    from argon2 import PasswordHasher

    from tritonlab import config

    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs")
    print(f"tritonlab's cost: {config.ARGON2_DEFAULT}")
    for t, m, p in COSTS:
        hasher = PasswordHasher(time_cost=t, memory_cost=m, parallelism=p)
        stored = hasher.hash("a password")
        took = []
        for _ in range(args.runs):
            started = time.perf_counter()
            hasher.verify(stored, "a password")
            took.append(1000 * (time.perf_counter() - started))
        print(f"t={t} m={m} p={p}: fastest {min(took):.1f} ms, median {statistics.median(took):.1f} ms")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
