# Leaves one of each kind of shared memory and message store behind, each with a secret in it, or, when one
# is there already, reads it: these outlive the process that made them, so without a private IPC namespace
# (and a private /dev/shm) the next run, or the host, could find them. One line per kind:
# "KIND: left" / "KIND: refused: ..." when the run found nothing, "KIND: LEAK ..." when it found an earlier one.
import ctypes
import ctypes.util
import os

TOKEN = "__TOKEN__"  # fresh for each test run (cases.Bench.token)
KEY, NAME = 0x17000000 | int(TOKEN, 16), f"tritonlab-ipc-{TOKEN}"
SECRET = b"ipc-secret-of-a-run"
IPC_CREAT, IPC_NOWAIT = 0o1000, 0o4000

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
# POSIX message queues: in libc since glibc 2.34, in librt before
librt = libc if hasattr(libc, "mq_open") else ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)


class Message(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]


def sysv_shm() -> None:
    found = libc.shmget(KEY, 0, 0o600)
    if found >= 0:
        print("sysv-shm: LEAK", ctypes.string_at(libc.shmat(found, None, 0), len(SECRET)))
        return
    print("sysv-shm: refused: no segment from an earlier run")
    segment = libc.shmget(KEY, 4096, IPC_CREAT | 0o600)
    ctypes.memmove(libc.shmat(segment, None, 0), SECRET, len(SECRET))
    print("sysv-shm: left" if segment >= 0 else "sysv-shm: could not create")


def sysv_msg() -> None:
    found = libc.msgget(KEY, 0o600)
    if found >= 0:
        message = Message()
        got = libc.msgrcv(found, ctypes.byref(message), 64, 0, IPC_NOWAIT)
        print("sysv-msg: LEAK", message.mtext if got >= 0 else b"(an empty queue)")
        return
    print("sysv-msg: refused: no queue from an earlier run")
    queue = libc.msgget(KEY, IPC_CREAT | 0o600)
    sent = libc.msgsnd(queue, ctypes.byref(Message(1, SECRET)), len(SECRET), IPC_NOWAIT)
    print("sysv-msg: left" if queue >= 0 and sent == 0 else "sysv-msg: could not create")


def sysv_sem() -> None:
    if libc.semget(KEY, 0, 0o600) >= 0:
        print("sysv-sem: LEAK a semaphore set of an earlier run")
        return
    print("sysv-sem: refused: no semaphore set from an earlier run")
    print("sysv-sem: left" if libc.semget(KEY, 1, IPC_CREAT | 0o600) >= 0 else "sysv-sem: could not create")


def posix_mq() -> None:
    name = f"/{NAME}".encode()
    found = librt.mq_open(name, os.O_RDONLY | os.O_NONBLOCK)
    if found >= 0:
        buffer = ctypes.create_string_buffer(1 << 16)
        got = librt.mq_receive(found, buffer, len(buffer), None)
        print("posix-mq: LEAK", buffer.raw[: max(got, 0)])
        return
    print("posix-mq: refused: no queue from an earlier run")
    queue = librt.mq_open(name, os.O_CREAT | os.O_WRONLY, 0o600, None)
    sent = librt.mq_send(queue, SECRET, len(SECRET), 0) if queue >= 0 else -1
    print(
        "posix-mq: left" if sent == 0 else f"posix-mq: could not create ({os.strerror(ctypes.get_errno())})"
    )


def posix_shm() -> None:
    path = f"/dev/shm/{NAME}"  # what shm_open(3) opens
    try:
        with open(path, "rb") as f:
            print("posix-shm: LEAK", f.read(64))
            return
    except OSError:
        print("posix-shm: refused: no object from an earlier run")
    try:
        with open(path, "wb") as f:
            f.write(SECRET)
        print("posix-shm: left")
    except OSError as exc:
        print(f"posix-shm: could not create ({exc.strerror})")


for kind in (sysv_shm, sysv_msg, sysv_sem, posix_mq, posix_shm):
    kind()
