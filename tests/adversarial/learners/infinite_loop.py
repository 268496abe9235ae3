def vector_copy(x):
    while True:
        pass
