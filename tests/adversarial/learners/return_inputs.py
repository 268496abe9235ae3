def vector_copy(x):
    return x
