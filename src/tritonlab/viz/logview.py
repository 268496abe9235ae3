"""PARENT side: read an access log (numpy only) — lanes, element coordinates, per-program touched sets.

An access (see recorder.py) is {"op", "shape", "tensor", "offsets", "active", "oob"[, "suppressed"]}: one entry
per lane for `offsets` (element offsets from the tensor's data_ptr) and `active` ("1"/"0" per lane), and the
indices of active lanes that fell outside the tensor's elements in `oob`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tritonlab.runs.rundir import Malformed

GEMM_EXERCISES = {"matmul", "matmul-bias", "autotune"}
STRIP_EXERCISES = {"vector-copy", "pid-map", "vector-add"}


@dataclass
class Lanes:
    """One access as arrays: per lane its offset, whether it ran, whether it was out of bounds."""

    op: str
    tensor: int | None
    shape: tuple[int, ...]
    offsets: np.ndarray  # int64, one per lane (0 where unknown)
    active: np.ndarray  # bool
    oob: np.ndarray  # bool: active and not one of the tensor's elements

    @property
    def inside(self) -> np.ndarray:
        return self.active & ~self.oob

    @property
    def masked(self) -> np.ndarray:
        return ~self.active


def lanes(access: dict) -> Lanes:
    active = np.frombuffer(access["active"].encode(), dtype=np.uint8) == ord("1")
    offsets = np.asarray(
        access["offsets"] if access["offsets"] is not None else np.zeros(len(active)), dtype=np.int64
    )
    oob = np.zeros(len(active), dtype=bool)
    oob[np.asarray(access.get("oob", []), dtype=np.int64)] = True
    return Lanes(
        access["op"], access["tensor"], tuple(access["shape"]) or (len(active),), offsets, active, oob
    )


def main_launch(log: dict) -> dict | None:
    """The launch to draw: the last one that ran any program (after autotuning's trial launches)."""
    runs = [
        launch for launch in log.get("launches", []) if launch.get("programs") and not launch.get("evicted")
    ]
    return runs[-1] if runs else None


def program_accesses(launch: dict) -> list[list[Lanes]]:
    return [[lanes(a) for a in program["accesses"]] for program in launch["programs"]]


def touched_pairs(launch: dict) -> list[tuple[int, str]]:
    """(tensor index, op) pairs that occur, loads before stores, in argument order."""
    seen = {
        (a["tensor"], a["op"]) for p in launch["programs"] for a in p["accesses"] if a["tensor"] is not None
    }
    order = {"load": 0, "atomic": 1, "store": 2}
    return sorted(seen, key=lambda pair: (order.get(pair[1], 3), pair[0]))


def touched(launch: dict, tensor: int, op: str | None = None) -> dict[int, set[int]]:
    """program number (execution order) -> set of in-bounds element offsets it accessed."""
    out: dict[int, set[int]] = {}
    for number, program in enumerate(launch["programs"]):
        for access in program["accesses"]:
            if access["tensor"] != tensor or (op is not None and access["op"] != op):
                continue
            ln = lanes(access)
            out.setdefault(number, set()).update(ln.offsets[ln.inside].tolist())
    return out


def masked_lanes(launch: dict, tensor: int, op: str | None = None) -> dict[int, list[int]]:
    """program number -> lane numbers (within each access) that the mask switched off."""
    out: dict[int, list[int]] = {}
    for number, program in enumerate(launch["programs"]):
        for access in program["accesses"]:
            if access["tensor"] == tensor and (op is None or access["op"] == op):
                out.setdefault(number, []).extend(np.flatnonzero(lanes(access).masked).tolist())
    return out


def oob_offsets(launch: dict, tensor: int | None = None) -> dict[int, set[int]]:
    """program number -> out-of-bounds element offsets (relative to the access's tensor)."""
    out: dict[int, set[int]] = {}
    for number, program in enumerate(launch["programs"]):
        for access in program["accesses"]:
            if tensor is not None and access["tensor"] != tensor:
                continue
            ln = lanes(access)
            if ln.oob.any():
                out.setdefault(number, set()).update(ln.offsets[ln.oob].tolist())
    return out


def name(tensor: dict) -> str:
    """How a picture names a tensor: the kernel's argument, and what it is (`x_ptr (input x)`)."""
    arg, label = tensor.get("arg", "?"), tensor.get("label", "")
    return f"{arg} ({label})" if label and label != arg else str(arg)


def pid_label(program: dict, grid: list[int]) -> str:
    pid = program["pid"]
    dims = sum(1 for g in grid if g > 1) or 1
    return (
        str(pid[0])
        if dims == 1 and pid[1] == pid[2] == 0
        else "(" + ", ".join(map(str, pid[: max(dims, 2)])) + ")"
    )


# ---- storage offsets -> logical coordinates --------------------------------------------------------------


def index_of(tensor: dict) -> tuple[np.ndarray, np.ndarray]:
    """(sorted element offsets, their flat row-major logical indices) of a tensor's view."""
    return _index_of(tuple(tensor["shape"]), tuple(tensor["strides"]))


def _index_of(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    offs = np.zeros(1, dtype=np.int64)
    for d, s in zip(shape, strides, strict=True):
        offs = (offs[:, None] + np.arange(d, dtype=np.int64)[None, :] * s).ravel()
    order = np.argsort(offs, kind="stable")
    return offs[order], order.astype(np.int64)


def coords(tensor: dict, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(found, coordinates [lanes, ndim]) of element offsets; found is False for non-elements."""
    sorted_offs, flat = index_of(tensor)
    shape = tuple(tensor["shape"]) or (1,)
    if len(sorted_offs) == 0:
        return np.zeros(len(offsets), dtype=bool), np.zeros((len(offsets), len(shape)), dtype=np.int64)
    pos = np.clip(np.searchsorted(sorted_offs, offsets), 0, len(sorted_offs) - 1)
    found = sorted_offs[pos] == offsets
    idx = np.stack(np.unravel_index(flat[pos], shape), axis=1)
    return found, idx


def _design(shape: tuple[int, ...]) -> np.ndarray:
    """[1, lane index along each block axis] per lane."""
    grids = np.indices(shape).reshape(len(shape), -1).T.astype(np.float64)
    return np.hstack([np.ones((len(grids), 1)), grids])


def _fit(design: np.ndarray, idx: np.ndarray) -> np.ndarray | None:
    """Integer affine map lane -> coordinate that reproduces every exact lane, else None."""
    if len(design) < design.shape[1] or np.linalg.matrix_rank(design) < design.shape[1]:
        return None
    coef, *_ = np.linalg.lstsq(design, idx, rcond=None)
    coef = np.rint(coef)
    return coef if np.array_equal(design @ coef, idx) else None


def block_slopes(tensor: dict, accesses: list[Lanes]) -> dict[tuple[int, ...], np.ndarray]:
    """Per block shape: how a coordinate moves per lane step, from the first access that shows it fully.

    A program at the edge may have only one valid row, which says nothing about the row step; the same
    kernel line in an inner program does, and the step is the same for every program."""
    slopes: dict[tuple[int, ...], np.ndarray] = {}
    for ln in accesses:
        if ln.shape in slopes or int(np.prod(ln.shape)) != ln.offsets.size:
            continue
        found, idx = coords(tensor, ln.offsets)
        found &= ln.inside
        coef = _fit(_design(ln.shape)[found], idx[found].astype(np.float64))
        if coef is not None:
            slopes[ln.shape] = coef[1:]
    return slopes


def lane_coords(tensor: dict, ln: Lanes, slopes: dict | None = None) -> tuple[np.ndarray, bool]:
    """Logical coordinates of every lane, masked and out-of-bounds lanes included.

    Active lanes on real elements are exact. The others are extrapolated from the access's block: course
    kernels address a tile affinely (coordinate = start + a·row + b·col), so the fitted map places a masked
    lane where its element would have been. `slopes` (from `block_slopes`) supplies the per-lane steps when
    this access alone cannot (an edge tile). Returns (float coords [lanes, ndim], placed_by_fit)."""
    found, idx = coords(tensor, ln.offsets)
    found &= (
        ln.inside
    )  # a masked lane's offset can alias a real element (row i, column N is row i+1, column 0)
    out = idx.astype(np.float64)
    if found.all():
        return out, True
    design = _design(ln.shape) if np.prod(ln.shape) == len(out) else _design((len(out),))
    coef = _fit(design[found], idx[found].astype(np.float64))
    step = (slopes or {}).get(tuple(ln.shape))
    if coef is None and step is not None and found.any():
        start = np.rint(np.median(idx[found] - design[found][:, 1:] @ step, axis=0))
        trial = np.vstack([start[None, :], step])
        coef = trial if np.array_equal(design[found] @ trial, idx[found]) else None
    if coef is not None:
        out[~found] = design[~found] @ coef
        return out, True
    strides = np.asarray(tensor["strides"] or [1], dtype=np.int64)  # row-major guess from the offsets
    rest = ln.offsets[~found].copy()
    cols = np.zeros((len(rest), len(strides)))
    for axis in np.argsort(-np.abs(strides)):
        step_size = int(strides[axis]) or 1
        cols[:, axis] = np.floor_divide(rest, step_size)
        rest = rest - cols[:, axis].astype(np.int64) * step_size
    out[~found] = cols
    return out, False


def placed(launch: dict, tensor: int, op: str | None = None) -> dict[int, list[tuple[Lanes, np.ndarray]]]:
    """program number -> [(lanes, coordinates of every lane)] for one tensor's accesses."""
    meta = launch["tensors"][tensor]
    picked = {
        number: [
            lanes(a) for a in program["accesses"] if a["tensor"] == tensor and (op is None or a["op"] == op)
        ]
        for number, program in enumerate(launch["programs"])
    }
    slopes = block_slopes(meta, [ln for group in picked.values() for ln in group])
    return {
        number: [(ln, lane_coords(meta, ln, slopes)[0]) for ln in group]
        for number, group in picked.items()
        if group
    }


def kind_of(exercise: str, launch: dict) -> str:
    """'gemm', 'strip' or 'map': which picture fits this exercise's launch."""
    if exercise in GEMM_EXERCISES:
        return "gemm"
    if exercise in STRIP_EXERCISES:
        return "strip"
    dims = {len(launch["tensors"][t]["shape"]) for t, _ in touched_pairs(launch)}
    return "strip" if dims <= {0, 1} else "map"


def stats(launch: dict) -> dict:
    """Counts for captions and JSON answers. `masked_lanes` and `oob_lanes` count lane accesses: every load
    and store adds the lanes its mask switched off (or that fell outside the tensor), so a lane masked in
    three loads counts three times."""
    accesses = [lanes(a) for p in launch["programs"] for a in p["accesses"]]
    return {
        "programs": len(launch["programs"]),
        "grid": launch["grid"],
        "loads": sum(1 for a in accesses if a.op == "load"),
        "stores": sum(1 for a in accesses if a.op == "store"),
        "masked_lanes": int(sum(a.masked.sum() for a in accesses)),
        "oob_lanes": int(sum(a.oob.sum() for a in accesses)),
    }


# ---- vetting a log the learner's process wrote -----------------------------------------------------------

MIN_TENSOR_ELEMENTS = 1 << 16


def tensor_bound(case_numel: int) -> int:
    """The most elements a tensor of a recorded launch may declare: a case's outputs are of the order of its
    inputs (a matmul's C is at most their product), so sixteen times the inputs, at least 65536."""
    return max(MIN_TENSOR_ELEMENTS, 16 * int(case_numel))


def _ints(value: object, low: int = -(1 << 40), high: int = 1 << 40) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and low <= v < high for v in value
    )


def _vet_tensor(t: object, bound: int, where: str) -> None:
    if not isinstance(t, dict) or not _ints(t.get("shape"), 0) or not _ints(t.get("strides")):
        raise Malformed(f"{where}: a tensor without an integer shape and strides")
    if len(t["shape"]) != len(t["strides"]) or len(t["shape"]) > 8:
        raise Malformed(f"{where}: a tensor whose strides do not match its shape")
    numel = int(np.prod(t["shape"], dtype=object))
    if numel > bound:
        raise Malformed(
            f"{where}: a tensor of shape {t['shape']} ({numel} elements; the case allows {bound})"
        )
    for key in ("arg", "role", "label", "dtype"):
        if key in t and not isinstance(t[key], str):
            raise Malformed(f"{where}: a tensor's {key} is not text")


def _vet_access(a: object, tensors: int, where: str) -> int:
    if not isinstance(a, dict) or not isinstance(a.get("op"), str) or not isinstance(a.get("active"), str):
        raise Malformed(f"{where}: an access without an op and active lanes")
    n = len(a["active"])
    if a["active"].strip("01"):
        raise Malformed(f"{where}: active lanes other than 0/1")
    if a.get("tensor") is not None and not (isinstance(a["tensor"], int) and 0 <= a["tensor"] < tensors):
        raise Malformed(f"{where}: an access to a tensor that is not listed")
    if a.get("offsets") is not None and not (_ints(a["offsets"]) and len(a["offsets"]) == n):
        raise Malformed(f"{where}: offsets that do not match the lanes")
    if not _ints(a.get("oob", []), 0, n) or not _ints(a.get("shape", []), 0):
        raise Malformed(f"{where}: out-of-bounds lanes or a shape out of range")
    return n


def vet_log(result: object, case_numels: list[int], max_lanes: int) -> dict:
    """Check a viz.json against the cases really run: every field the drawing reads has its type, tensors are
    no larger than the case allows, lanes and programs stay within the recorder's budget. Raises Malformed."""
    if not isinstance(result, dict) or not isinstance(result.get("cases", []), list):
        raise Malformed("viz.json is not a log of cases")
    err = result.get("import_error")
    if err is not None and not (
        isinstance(err, dict) and all(isinstance(err.get(k), str) for k in ("type", "message"))
    ):
        raise Malformed("viz.json has an import_error without a type and message")
    if len(result.get("cases", [])) > len(case_numels):
        raise Malformed("viz.json lists more cases than were run")
    lanes_seen = 0
    for index, case in enumerate(result.get("cases", [])):
        where = f"case {index}"
        if not isinstance(case, dict) or not isinstance(case.get("launches", []), list):
            raise Malformed(f"{where} is not a case log")
        bound = tensor_bound(case_numels[index])
        for launch in case.get("launches", []):
            if not isinstance(launch, dict) or not _ints(launch.get("grid"), 0, 1 << 31):
                raise Malformed(f"{where}: a launch without an integer grid")
            tensors, programs = launch.get("tensors", []), launch.get("programs", [])
            if not isinstance(tensors, list) or not isinstance(programs, list):
                raise Malformed(f"{where}: a launch without tensor and program lists")
            for t in tensors:
                _vet_tensor(t, bound, where)
            for program in programs:
                if not isinstance(program, dict) or not _ints(program.get("pid"), 0, 1 << 31):
                    raise Malformed(f"{where}: a program without an integer pid")
                if len(program["pid"]) != 3 or not isinstance(program.get("accesses"), list):
                    raise Malformed(f"{where}: a program without a 3-d pid and accesses")
                lanes_seen += 1 + sum(_vet_access(a, len(tensors), where) for a in program["accesses"])
                if lanes_seen > 2 * max_lanes + 1024:
                    raise Malformed(f"more lanes and programs than the recorder keeps ({max_lanes})")
    return result
