# Kills the process it was forked from: the warm zygote.
import os
import signal


def vector_copy(x):
    for pid in (os.getppid(),):
        try:
            os.kill(pid, signal.SIGKILL)
            print(f"killed {pid}")
        except OSError as exc:
            print(f"refused: {pid}: {exc.strerror}")
    return x
