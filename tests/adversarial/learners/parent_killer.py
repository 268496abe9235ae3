# Kills its parent, again and again: before runs had PID namespaces of their own that was the zygote, and
# every check in flight crashed with it. It never signals the server, nor PID 1 outside a namespace of its
# own (once the zygote is dead this process is re-parented, and must not kill what it was handed to).
import os
import signal
import sys
import time

SERVER = int("__SERVER_PID__")
DURATION = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
OWN_NAMESPACE = not os.path.exists(f"/proc/{SERVER}")
SPARED = {0, SERVER} | (set() if OWN_NAMESPACE else {1})

tried, sent, rounds = set(), 0, 0
end = time.monotonic() + DURATION
while time.monotonic() < end and not os.path.exists("stop"):  # the test says when
    rounds += 1
    parent = os.getppid()
    if parent not in SPARED:
        tried.add(parent)
        try:
            os.kill(parent, signal.SIGKILL)
            sent += 1
        except OSError:
            pass
    time.sleep(0.05)
print(f"refused: rounds {rounds}, parents signalled {sorted(tried)}, signals sent {sent}")
