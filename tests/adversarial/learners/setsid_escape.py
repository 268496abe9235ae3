# A grandchild that leaves the session and process group (setsid), then lives on.
import os
import subprocess
import sys
import time

subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(120)"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # double fork: re-parented away from the run
        time.sleep(120)
    os._exit(0)
time.sleep(120)
