# Leaves a SysV shared-memory segment behind (key 0x1717) with a secret in it, or, when one exists already,
# reads it: shared memory outlives a process, so without a private IPC namespace the next run could read it.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
KEY, SIZE, IPC_CREAT = 0x1717, 4096, 0o1000

found = libc.shmget(KEY, 0, 0o666)
if found >= 0:
    address = libc.shmat(found, None, 0)
    print("LEAK", ctypes.string_at(address, 24))
else:
    print("refused: no segment from an earlier run")
    segment = libc.shmget(KEY, SIZE, IPC_CREAT | 0o666)
    address = libc.shmat(segment, None, 0)
    ctypes.memmove(address, b"shm-secret-of-a-run", 19)
    print("left a segment" if segment >= 0 else "could not create a segment")
