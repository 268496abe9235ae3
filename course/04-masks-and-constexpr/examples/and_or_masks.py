"""Why masks are combined with `&` and `|`, never with Python's `and` and `or`.

TRITON_INTERPRET=1 python examples/and_or_masks.py

We want to touch only lanes 1 and 2 of an 8-lane block: `(lanes > 0)` combined with `(lanes < 3)`.

* `&` and `|` work element by element, on the interpreter and on a GPU.
* On the interpreter, `and`/`or` are plain Python: `a and b` asks whether the block `a` is "true" (any
  object is), then simply returns `b`; `a or b` returns `a`. No error, no warning, just the wrong mask.
* Compiled for a GPU, Triton rewrites `and`/`or` on blocks into element-by-element operations but warns that
  this is deprecated. Code that is right only on one backend is a trap, so always write `&` and `|`, with
  parentheses around each comparison (`&` binds tighter than `<`).
"""

import os

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK = 8


@triton.jit
def mark_with_amp(out_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    mask = (lanes > 0) & (lanes < 3)
    tl.store(out_ptr + lanes, 1, mask=mask)


@triton.jit
def mark_with_and(out_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    mask = (lanes > 0) and (lanes < 3)  # wrong: use &
    tl.store(out_ptr + lanes, 1, mask=mask)


@triton.jit
def mark_with_or(out_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    mask = (lanes < 1) or (lanes > 5)  # wrong: use |
    tl.store(out_ptr + lanes, 1, mask=mask)


@triton.jit
def mark_with_bar(out_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    mask = (lanes < 1) | (lanes > 5)
    tl.store(out_ptr + lanes, 1, mask=mask)


def lanes_written(kernel) -> list[int]:
    out = torch.zeros(BLOCK, dtype=torch.int32, device=DEVICE)
    kernel[(1,)](out, BLOCK=BLOCK)
    return [i for i, v in enumerate(out.tolist()) if v]


def main() -> None:
    mode = "interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "compiled"
    print(f"mode: {mode}")
    print(f"(lanes > 0) &   (lanes < 3) wrote lanes {lanes_written(mark_with_amp)}")
    print(f"(lanes > 0) and (lanes < 3) wrote lanes {lanes_written(mark_with_and)}")
    print(f"(lanes < 1) |   (lanes > 5) wrote lanes {lanes_written(mark_with_bar)}")
    print(f"(lanes < 1) or  (lanes > 5) wrote lanes {lanes_written(mark_with_or)}")
    if mode == "interpreter":
        print("`and` returned its right operand and `or` its left one: the masks are silently wrong.")
    else:
        print("Compiled, `and`/`or` were turned into `&`/`|` with a deprecation warning; do not rely on it.")


if __name__ == "__main__":
    main()
