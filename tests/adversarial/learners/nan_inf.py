import torch


def vector_copy(x):
    y = torch.empty_like(x)
    if y.is_floating_point():
        y.fill_(float("nan"))
        y[::2] = float("inf")
    else:
        y.fill_(-1)
    return y
