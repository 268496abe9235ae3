# Kills every other run of its worker it can find, again and again: the neighbours' checks and their replay
# and compile children as they come and go (what a hostile test of a class did to a neighbour's replay).
# Bounded to its siblings: processes with the same parent as itself (before runs had PID namespaces of their
# own, the zygote's other children; in its own namespace, none). It never signals PID 1 or the server.
import os
import signal
import sys
import time

SERVER = int("__SERVER_PID__")
DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


me, parent = os.getpid(), os.getppid()
seen, signalled, rounds = set(), 0, 0
end = time.monotonic() + DURATION
while time.monotonic() < end and not os.path.exists("stop"):  # the test says when
    rounds += 1
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (me, parent, 0, 1, SERVER):
            continue
        try:
            if parent_of(int(entry)) != parent:
                continue
            seen.add(int(entry))
            os.kill(int(entry), signal.SIGKILL)
            signalled += 1
        except OSError:
            pass
    if rounds == 1:
        print(f"parent {parent}; pids visible: {sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}")
    time.sleep(0.02)
print(f"refused: rounds {rounds}, siblings seen {sorted(seen)}, signals sent {signalled}")
