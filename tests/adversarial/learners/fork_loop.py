# A fork loop (bounded: 200 processes): every child sleeps, the parent forks until the system refuses.
import os
import time

forks, refused = 0, ""
for _ in range(200):
    try:
        if os.fork() == 0:
            time.sleep(20)
            os._exit(0)
        forks += 1
    except OSError as exc:
        refused = exc.strerror or str(exc)
        break
print(f"forked {forks}; refused: {refused or 'never'}", flush=True)
