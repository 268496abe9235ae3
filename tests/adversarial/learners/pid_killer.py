# Signals every process it can find, again and again: SIGKILL to each pid in /proc and to its parent, and
# kill(-1) (every process it may signal). Bounded, so that a broken sandbox takes down only the test: where
# the server's process is visible (layer 1 without a PID namespace of its own) only the server's descendants,
# never the server itself, PID 1 or kill(-1); elsewhere (its own namespace, or bubblewrap's) everything it sees.
import os
import signal
import sys
import time

SERVER = int("__SERVER_PID__")
DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
SERVER_VISIBLE = os.path.exists(f"/proc/{SERVER}")


def links():
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    found[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    return found


def targets():
    parents = links()
    if not SERVER_VISIBLE:
        return set(parents) - {os.getpid()}
    below, grew = {SERVER}, True
    while grew:
        more = {p for p, parent in parents.items() if parent in below} - below
        below |= more
        grew = bool(more)
    return below - {SERVER, os.getpid(), 0, 1}


seen, signalled, rounds = set(), 0, 0
end = time.monotonic() + DURATION
while time.monotonic() < end and not os.path.exists("stop"):  # the test says when
    rounds += 1
    found = targets()
    seen |= found
    for pid in sorted(found):
        try:
            os.kill(pid, signal.SIGKILL)
            signalled += 1
        except OSError:
            pass
    if not SERVER_VISIBLE:
        try:
            os.kill(-1, signal.SIGKILL)  # every process this one may signal, itself and PID 1 excepted
        except OSError:
            pass
    if rounds == 1:
        print(f"parent {os.getppid()}; pids visible: {sorted(links())}")
    time.sleep(0.05)
print(f"refused: rounds {rounds}, pids seen {sorted(seen)}, signals sent {signalled}")
