# A hostile learner's file for scripts/load_gpu.py --hostile (vector-copy): instead of copying, it makes and
# destroys CUDA contexts through the driver's API (ctypes) until its run is ended at the wall limit, with the
# driver's default work queues, the costliest contexts a learner's own process can ask for. The driver makes
# contexts one at a time (docs/scale.md, "CUDA contexts, one at a time"), so this is what one learner could do
# to the starts of everyone else's runs. Without a CUDA driver (the interpreter) it fails at once.
import ctypes
import os


def vector_copy(x):
    os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)  # read by the driver at each context's creation
    cuda = ctypes.CDLL("libcuda.so.1")
    device, ctx = ctypes.c_int(), ctypes.c_void_p()
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(device), 0) != 0:
        raise RuntimeError("no CUDA device")
    while True:
        if cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, device) == 0:
            cuda.cuCtxDestroy_v2(ctx)
