# Tries to kill the server process (its pid is known to the attacker) and PID 1. A signal a PID namespace's
# init takes no notice of returns without error, so the attack looks whether its target is gone.
import os
import signal
import time


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def vector_copy(x):
    for pid in (int("__SERVER_PID__"), 1):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError as exc:
            print(f"refused: {pid}: {exc.strerror}")
            continue
        time.sleep(0.3)
        print(f"refused: {pid}: still alive after SIGKILL" if alive(pid) else f"LEAK: killed {pid}")
    return x
