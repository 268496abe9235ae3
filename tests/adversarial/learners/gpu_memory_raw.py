# Takes GPU memory around torch's allocator, straight from the CUDA driver (ctypes): 6 GiB under a 2 GiB soft cap
# (TRITONLAB_GPU_MEMORY_GIB, set to 2 by the GPU test), which torch's cap cannot see. The parent's line on the
# driver's count (runs/gpu_memory.py: the cap plus 2 GiB) must end the run within seconds, not at its wall limit.
import ctypes
import time

import torch


def vector_copy(x):
    torch.cuda.synchronize()  # this process's context is current: the driver's calls below use it
    cuda = ctypes.CDLL("libcuda.so.1")
    held = []
    for _ in range(6):
        ptr = ctypes.c_uint64()
        if cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(1 << 30)) != 0:
            break
        cuda.cuMemsetD8_v2(ptr, ctypes.c_ubyte(1), ctypes.c_size_t(1 << 30))
        held.append(ptr)
    cuda.cuCtxSynchronize()
    print(f"HELD {len(held)} GiB outside torch", flush=True)
    time.sleep(50)  # held well past the line's reading; the wall limit (60 s) is not what should end it
    return x.clone()
