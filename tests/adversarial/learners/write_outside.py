# Tries to write outside its run directory: beside the canary, into the course, the workspace, /tmp.
import os

TARGETS = ["__CANARY_DIR__", "__COURSE__", "__WORKSPACE__", "/tmp", "__RUNS__"]


def vector_copy(x):
    for folder in TARGETS:
        try:
            with open(os.path.join(folder, "pwned.txt"), "w") as f:
                f.write("pwned")
            print(f"LEAK: wrote into {folder}")
        except OSError as exc:
            print(f"refused: {folder}: {exc.strerror}")
    try:
        with open("__CANARY__", "a") as f:
            f.write("pwned")
        print("LEAK: appended to the canary")
    except OSError as exc:
        print(f"refused: canary: {exc.strerror}")
    return x
