# A fork bomb, bounded so that it cannot take a machine down even where nothing stops it (root, layer 1):
# every process forks at most DEPTH times (2**DEPTH processes at most), then all of them sleep.
import os
import time

DEPTH = 7
made, refused = 0, 0
for _ in range(DEPTH):
    try:
        if os.fork() == 0:
            made = 0
            continue
        made += 1
    except OSError:
        refused += 1
        break
print(f"pid {os.getpid()} forked {made}, refused {refused}", flush=True)
time.sleep(30)
