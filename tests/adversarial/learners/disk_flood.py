# Fills the run directory with one file, bounded at 1 GiB: the file-size limit (512 MiB) stops it. Once per check.
FLOODED = []


def vector_copy(x):
    if not FLOODED:
        FLOODED.append(True)
        block = b"\0" * (16 << 20)
        with open("flood.bin", "wb") as f:
            for _ in range(64):
                f.write(block)
    return x
