# Gigabytes of output (bounded at 2 GiB): the output cap stops it long before.
def vector_copy(x):
    line = "flood " * 1000 + "\n"
    for _ in range((2 << 30) // len(line)):
        print(line, end="")
