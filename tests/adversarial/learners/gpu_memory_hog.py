# Allocates more GPU memory than a run's soft cap (TRITONLAB_GPU_MEMORY_GIB, set to 2 by the GPU test):
# torch's allocator must refuse it with an OutOfMemoryError naming the cap, and the next run must work.
import torch


def vector_copy(x):
    hoard = torch.empty(4 << 30, dtype=torch.uint8, device=x.device)  # 4 GiB, twice the cap
    hoard.fill_(1)
    return x.clone()
