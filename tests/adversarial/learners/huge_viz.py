# In viz mode: writes its own viz.json declaring a 4000 x 5000 tensor with 1-element strides, so that a
# parent that trusted it would build offset tables of 20 million elements per request.
import json
import os


def vector_copy(x):
    tensor = {
        "arg": "x_ptr",
        "role": "input",
        "label": "x",
        "dtype": "float32",
        "shape": [4000, 5000],
        "strides": [5000, 1],
        "element_size": 4,
        "numel": 20_000_000,
    }
    access = {"op": "load", "shape": [4], "tensor": 0, "offsets": [0, 1, 2, 3], "active": "1111", "oob": []}
    launch = {
        "kernel": "copy_kernel",
        "grid": [1, 1, 1],
        "tensors": [tensor],
        "scalars": {},
        "programs": [{"pid": [0, 0, 0], "accesses": [access]}],
        "error": None,
        "evicted": False,
    }
    case = {"name": "n=4", "status": "returned", "launches": [launch]}
    with open("viz.json", "w") as f:
        json.dump({"exercise": "vector-copy", "file": "", "cases": [case]}, f)
    os._exit(0)
