# Kills the process it was forked from: the warm zygote, which the test (or the server) owns.
# The parent is read once, at import, while it is still the zygote: once the zygote is dead this process is
# re-parented (to PID 1, or to the test runner when it is a subreaper), and an attack that asked again on the
# next case would signal that process instead. It never signals PID 1 or the server process.
# In a PID namespace of its own (runs/pidns.py) its parent is the namespace's init, which takes no signal
# from inside: kill() returns without error and nothing dies, so the attack looks whether its parent is
# still there before it claims anything.
import os
import signal
import time

PARENT = os.getppid()
SERVER = int("__SERVER_PID__")
# In a PID namespace of its own (hardened: the server is invisible) PID 1 is the sandbox's init, fair game.
IN_OWN_PID_NAMESPACE = not os.path.exists(f"/proc/{SERVER}")
SPARED = {0, SERVER} | (set() if IN_OWN_PID_NAMESPACE else {1})
done = False


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def vector_copy(x):
    global done
    if not done:
        done = True
        if PARENT in SPARED:
            print(f"spared {PARENT}")
        else:
            try:
                os.kill(PARENT, signal.SIGKILL)
            except OSError as exc:
                print(f"refused: {PARENT}: {exc.strerror}")
            else:
                time.sleep(0.3)
                if alive(PARENT):
                    print(f"refused: {PARENT}: still alive after SIGKILL")
                else:
                    print(f"killed {PARENT}")
    return x
