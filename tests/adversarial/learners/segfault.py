import ctypes


def vector_copy(x):
    ctypes.cast(8, ctypes.POINTER(ctypes.c_int))[0] = 1  # write to address 8: SIGSEGV
