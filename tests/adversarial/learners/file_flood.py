# Floods its run directory (bounded: 300000 files, or 256 MiB of bytes with "bytes" as argument), and when
# refused keeps retrying for 20 s, so that only the parent can end it early.
import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "files"
os.makedirs("flood", exist_ok=True)
made, error = 0, ""
try:
    if mode == "files":
        for i in range(300_000):
            with open(f"flood/f{i}", "w") as f:
                f.write("x")
            made += 1
    else:
        chunk = b"\1" * (1 << 20)
        with open("flood/big", "wb") as f:
            for _ in range(256):
                f.write(chunk)
                f.flush()
                made += 1
except OSError as exc:
    error = exc.strerror or str(exc)
print(f"made {made} ({mode}); refused: {error or 'never'}", flush=True)
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        with open(f"flood/again{time.monotonic_ns()}", "w") as f:
            f.write("x")
    except OSError:
        time.sleep(0.01)
