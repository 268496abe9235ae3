# The Judge0 escape (CVE-2024-28185) and friends: plant links and FIFOs where the server reads and cleans,
# forge a result that points at them, and leave. The server must never follow, read or block on them.
import json
import os


def vector_copy(x):
    os.symlink("__CANARY__", "secret.npy")
    os.symlink("__CANARY_DIR__", "up")  # cleanup must unlink this, not empty the canary folder
    os.mkfifo("blocker.npy")
    out = {
        "file": "secret.npy",
        "dtype": "float32",
        "shape": [1],
        "stride": [1],
        "device_type": "cpu",
        "contiguous": True,
        "guarded": True,
    }
    case = {
        "name": "n=1 float32",
        "status": "returned",
        "launches": [{"kernel": "copy_kernel", "grid": [1], "constexprs": {}}],
        "torch_ops": [],
        "outputs": [out],
        "guard_violations": [],
        "inputs_modified": [],
        "returned": "Tensor",
        "function": "vector_copy",
    }
    fifo = dict(case, name="n=7 float32", outputs=[dict(out, file="blocker.npy")])
    with open("result.json.tmp", "w") as f:
        json.dump({"cases": [case, fifo], "device_type": "cpu", "notes": []}, f)
    os.replace("result.json.tmp", "result.json")
    os.unlink("output.log")
    os.symlink("__CANARY__", "output.log")
    os._exit(0)
