# Allocates (and touches) 256 MiB blocks, bounded at 6 GiB in case no limit stops it; once per check.
BOMBED = []


def vector_copy(x):
    if not BOMBED:
        BOMBED.append(True)
        blocks = []
        for _ in range(24):
            blocks.append(bytearray(256 << 20))
    return x
