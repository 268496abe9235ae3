"""A tour of strides: how common views of one tensor are laid out, and the address grid a tile reads.

Run:  TRITON_INTERPRET=1 python examples/strides_tour.py
"""

import torch
import triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def describe(name, t):
    print(f"{name:22s} shape={str(tuple(t.shape)):10s} stride={str(t.stride()):10s} "
          f"offset={t.storage_offset():3d} contiguous={t.is_contiguous()}")


def address_grid(t, pid_m, pid_n, block_m, block_n):
    """Element offsets (relative to t.data_ptr()) one program would build, and its mask; -1 where masked."""
    m, n = t.shape
    offs_m = pid_m * block_m + torch.arange(block_m)
    offs_n = pid_n * block_n + torch.arange(block_n)
    addr = offs_m[:, None] * t.stride(0) + offs_n[None, :] * t.stride(1)
    mask = (offs_m[:, None] < m) & (offs_n[None, :] < n)
    return torch.where(mask, addr, torch.full_like(addr, -1))


def main():
    base = torch.arange(6 * 8, dtype=torch.float32, device=DEVICE).reshape(6, 8)
    views = {
        "base (6, 8)": base,
        "base.t()": base.t(),
        "base[:, 2:7]": base[:, 2:7],
        "base[1::2]": base[1::2],
        "base[::2, ::3]": base[::2, ::3],
        "base.t()[1:4]": base.t()[1:4],
        "base[0].expand(3, 8)": base[0].expand(3, 8),
        "base.reshape(8, 6)": base.reshape(8, 6),
    }
    for name, v in views.items():
        describe(name, v)

    # element (i, j) of a view sits at storage_offset + i*stride0 + j*stride1
    storage = base.flatten()
    for name, v in views.items():
        s0, s1 = v.stride()
        idx = v.storage_offset() + torch.arange(v.shape[0])[:, None] * s0 + torch.arange(v.shape[1])[None, :] * s1
        assert torch.equal(storage.cpu()[idx], v.cpu()), name
    print("\naddress formula verified for every view")

    # the grid of offsets (relative to data_ptr) that program (1, 0) of a 4x4 tiling reads from base.t()
    v = base.t()
    grid = (triton.cdiv(v.shape[0], 4), triton.cdiv(v.shape[1], 4))
    print(f"\nbase.t() with 4x4 tiles -> launch grid {grid}; offsets read by program (1, 0), -1 = masked:")
    print(address_grid(v, 1, 0, 4, 4))
    print("program (1, 1) hangs over the right edge: its columns 6 and 7 are masked:")
    print(address_grid(v, 1, 1, 4, 4))


if __name__ == "__main__":
    main()
