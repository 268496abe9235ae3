"""A validation protocol, and the bugs each of its ingredients catches.

Four buggy vector-add variants are run through the same checks as the correct one:
  - off_by_one_mask   : mask = offsets < n - 1        -> caught by the poisoned (NaN) output
  - loads_x_twice     : y is never read                -> caught by random, independent inputs
  - floor_grid        : grid = n // BLOCK on the host   -> caught by sizes just past a multiple of BLOCK
  - shifted_store     : writes out[i + 1]               -> caught by the guard zones around the output
The shifted store writes one element past the output, but into the test's own guard zone, so it is safe to run.

    TRITON_INTERPRET=1 python examples/validation_protocol.py
"""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK = 256
GUARD = 32
SENTINEL = 12345.0


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BUG: tl.constexpr, BLOCK: tl.constexpr):
    # BUG selects a variant at compile time: 0 = correct, 1 = off-by-one mask, 2 = loads x twice,
    # 3 = store shifted by one element. Cost model (correct variant): bytes = 3 * n * element_size.
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    if BUG == 1:
        mask = offsets < n - 1
    else:
        mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if BUG == 2:
        y = tl.load(x_ptr + offsets, mask=mask)
    else:
        y = tl.load(y_ptr + offsets, mask=mask)
    if BUG == 3:
        tl.store(out_ptr + offsets + 1, x + y, mask=mask)
    else:
        tl.store(out_ptr + offsets, x + y, mask=mask)


VARIANTS = {"correct": 0, "off_by_one_mask": 1, "loads_x_twice": 2, "floor_grid": 0, "shifted_store": 3}


def launch(variant: str, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
    n = out.numel()
    programs = n // BLOCK if variant == "floor_grid" else triton.cdiv(n, BLOCK)
    if programs > 0:
        add_kernel[(programs,)](x, y, out, n, BUG=VARIANTS[variant], BLOCK=BLOCK)


def check(variant: str, x: torch.Tensor, y: torch.Tensor) -> str | None:
    """Return None if the variant passes on these inputs, else the name of the check that failed."""
    n = x.numel()
    buffer = torch.full((n + 2 * GUARD,), float("nan"), device=DEVICE)  # poison everywhere ...
    buffer[:GUARD] = SENTINEL  # ... and sentinels in the guard zones
    buffer[GUARD + n :] = SENTINEL
    out = buffer[GUARD : GUARD + n]
    launch(variant, x, y, out)
    if not (torch.all(buffer[:GUARD] == SENTINEL) and torch.all(buffer[GUARD + n :] == SENTINEL)):
        return "guard zone"
    if torch.isnan(out).any():
        return "poisoned output"
    if not torch.allclose(out, x + y, rtol=1.3e-6, atol=1e-5):
        return "wrong values"
    return None


def main() -> None:
    sizes = [1, 7, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 1, 3001]
    print(f"sizes: {sizes}\n")
    print(f"{'variant':<18} {'inputs':<22} verdict")
    for variant in VARIANTS:
        for data in ("random, independent", "x == y (weak test)"):
            failures = {}
            for n in sizes:
                x = torch.randn(n, device=DEVICE)
                y = x.clone() if data.startswith("x == y") else torch.randn(n, device=DEVICE)
                reason = check(variant, x, y)
                if reason:
                    failures.setdefault(reason, []).append(n)
            verdict = "passes" if not failures else "; ".join(f"{r} at n={ns}" for r, ns in failures.items())
            print(f"{variant:<18} {data:<22} {verdict}")
            if variant == "correct":
                assert not failures
            elif data.startswith("random"):
                assert failures, f"the protocol missed {variant}"
    print("\nEvery bug is caught by the full protocol; 'loads_x_twice' slips through when x == y.")


if __name__ == "__main__":
    main()
