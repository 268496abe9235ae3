# Tries to read what is outside its run directory: the progress database, SSH keys, a planted canary.
# It prints only WHETHER it could (never the contents): LEAK lines mean a containment failed.
import os

TARGETS = ["__DATABASE__", "__CANARY__", "__HOME__/.ssh", "__HOME__/.bash_history", "/etc/shadow"]


def vector_copy(x):
    for target in TARGETS:
        try:
            if os.path.isdir(target):
                os.listdir(target)
            else:
                open(target, "rb").read(1)
            print(f"LEAK: could read {target}")
        except OSError as exc:
            print(f"refused: {target}: {exc.strerror}")
    return x
