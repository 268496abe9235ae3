# Three forked children, each under the per-process address-space limit, that together hold far more than
# the run's memory limit (bounded: 3 x 320 MiB). Before per-run cgroups all three held their blocks.
import os
import sys
import time

BLOCK = 320 << 20
kids = []
for n in range(3):
    pid = os.fork()
    if pid == 0:
        block = bytearray(BLOCK)
        for i in range(0, BLOCK, 4096):
            block[i] = 1
        print(f"child {n} holds {BLOCK >> 20} MiB", flush=True)
        time.sleep(4)
        os._exit(0)
    kids.append(pid)
held = 0
for pid in kids:
    _, status = os.waitpid(pid, 0)
    held += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
print(f"children that kept their block: {held}", flush=True)
if held == 3:
    print("ALL HELD: the run's processes together exceeded its memory limit", flush=True)
sys.exit(0)
