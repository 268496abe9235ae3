"""Diagnostics for strided inputs: which wrong reading of an input's memory explains the learner's output?

A kernel that ignores a tensor's strides reads the right storage through the wrong geometry. Knowing each
case's layout (contracts.layout_geometry), the parent can rebuild the storage an input lives in and replay
the usual mistakes — "indexed as if contiguous", "strides swapped", "column stride taken as 1" — then check
whether one of them reproduces the output. Parent side: numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tritonlab import i18n
from tritonlab.grading.contracts import Case, Tensor, contiguous_strides, decode, layout_geometry

Reading = tuple[str, np.ndarray]  # (hint, the values the kernel would have seen)
# A case larger than this gets no stride diagnosis: each trial rebuilds every input's storage and recomputes the
# output, and a GPU check's large strided cases (beside smaller ones of the same layouts, which get it) made the
# hints 7 % of the server's sampled time under a class's load (H100-80GB-HBM3 run 2026-12-07 (82c912d)).
HINT_MAX_ELEMENTS = 1 << 20


def storage_image(t: Tensor) -> tuple[np.ndarray, tuple[int, ...], int]:
    """The input's storage as float64 (NaN outside the tensor's elements), its strides and offset."""
    shape = tuple(t.values.shape)
    strides, offset, extent = layout_geometry(shape, t.layout)
    storage = np.full(extent, np.nan)
    if t.values.size:
        storage[element_offsets(shape, strides, offset)] = t.values
    return storage, strides, offset


def element_offsets(shape: tuple[int, ...], strides: Sequence[int], offset: int) -> np.ndarray:
    grids = np.indices(shape)
    return offset + sum(grids[d] * int(strides[d]) for d in range(len(shape)))


def read_as(storage: np.ndarray, shape: tuple[int, ...], strides: Sequence[int], offset: int) -> np.ndarray:
    """What a kernel reading `storage` with these strides sees (NaN where it would read outside)."""
    idx = element_offsets(shape, strides, offset)
    out = np.full(shape, np.nan)
    ok = (idx >= 0) & (idx < storage.size)
    out[ok] = storage[idx[ok]]
    return out


def misreadings(t: Tensor, name: str) -> list[Reading]:
    """The classic wrong readings of a non-contiguous input (for 1-D and 3-D: read as if contiguous)."""
    if t.values.size == 0 or t.values.ndim == 0:
        return []
    if t.values.ndim != 2:
        if t.layout in ("contiguous", "offset"):
            return []
        storage, strides, offset = storage_image(t)
        shape = tuple(t.values.shape)
        return [
            (
                i18n.t(
                    "grader.layout_values_depend_strides_kernel",
                    name=name,
                    size=t.values.size,
                    strides=tuple(strides),
                ),
                read_as(storage, shape, tuple(contiguous_strides(shape)), offset),
            )
        ]
    storage, strides, offset = storage_image(t)
    shape = tuple(t.values.shape)
    rows, cols = shape
    if t.layout in ("contiguous", "offset"):  # only a swap can go wrong here
        return (
            [
                (
                    i18n.t("grader.layout_strides_name_swapped_offset", name=name),
                    read_as(storage, shape, (strides[1], strides[0]), offset),
                )
            ]
            if rows > 1 and cols > 1
            else []
        )
    readings: list[Reading] = [
        (
            i18n.t("grader.layout_values_depend_row_stride", name=name, cols=cols, strides=tuple(strides)),
            read_as(storage, shape, (cols, 1), offset),
        )
    ]
    if strides[0] != strides[1]:
        readings.append(
            (
                i18n.t("grader.layout_strides_name_swapped_its", name=name, strides=tuple(strides)),
                read_as(storage, shape, (strides[1], strides[0]), offset),
            )
        )
    if strides[1] != 1:
        readings.append(
            (
                i18n.t("grader.layout_kernel_assumed_columns_name", name=name, strides=strides[1]),
                read_as(storage, shape, (strides[0], 1), offset),
            )
        )
    return readings


def actual_values(result: dict, out_dtype: str, index: int = 0) -> np.ndarray | None:
    arrays = result.get("arrays") or []
    outputs = result.get("outputs") or []
    if index >= len(arrays) or index >= len(outputs) or outputs[index].get("dtype") != out_dtype:
        return None
    values = decode(arrays[index], out_dtype)
    shape = tuple(outputs[index]["shape"])
    return values.reshape(shape) if values.size == int(np.prod(shape)) else None


def explain_layout(
    case: Case,
    result: dict,
    out_dtype: str,
    op: Callable[[list[np.ndarray]], np.ndarray],
    rtol: float | np.ndarray,
    atol: float | np.ndarray,
    names: Sequence[str],
    generic: bool = True,
) -> str:
    """A hint naming the stride mistake that reproduces the output, or (if `generic`) a generic one for
    strided inputs."""
    tensors = [a for a in case.args if isinstance(a, Tensor)]
    if sum(t.values.size for t in tensors) > HINT_MAX_ELEMENTS:
        return ""
    values = [t.values for t in tensors]
    actual = actual_values(result, out_dtype)
    strided = [
        (names[i] if i < len(names) else f"input {i}", t)
        for i, t in enumerate(tensors)
        if t.layout not in ("contiguous", "offset") and t.values.ndim >= 2
    ]
    if actual is None:
        return ""
    readings = {
        i: misreadings(t, names[i] if i < len(names) else f"input {i}") for i, t in enumerate(tensors)
    }
    trials: list[tuple[str, dict[int, np.ndarray]]] = []
    for i, options in readings.items():  # one input misread ...
        trials += [(hint, {i: seen}) for hint, seen in options]
    for k in range(3):  # ... or every strided input misread the same way
        together = {i: options[k] for i, options in readings.items() if len(options) > k}
        if len(together) > 1:
            first, *rest = together
            others = ", ".join(f"`{names[i] if i < len(names) else i}`" for i in rest)
            trials.append(
                (
                    i18n.t(
                        "grader.layout_together_same_holds_for", together=together[first][0], others=others
                    ),
                    {i: v for i, (_, v) in together.items()},
                )
            )
    right = op(values)
    for hint, replaced in trials:
        with np.errstate(all="ignore"):
            candidate = op([replaced.get(i, v) for i, v in enumerate(values)])
        if candidate.shape != actual.shape:
            continue
        known = np.isfinite(candidate)
        with np.errstate(invalid="ignore"):
            close = np.abs(actual - candidate) <= atol + np.asarray(rtol) * np.abs(candidate)
        # where the misreading lands outside the tensor (NaN), the output must be non-finite too
        if (
            known.any()
            and np.all(close[known])
            and not np.any(np.isfinite(actual[np.isnan(candidate)]))
            and not np.allclose(candidate, right, equal_nan=True)
        ):
            return hint
    # No reading of the strides explains the output, so the strides are not the evidence: say nothing about
    # them. (A generic "use the strides" hint on every failing strided case misled learners whose strides
    # were right; `generic` is kept so that callers need not change.)
    del generic, strided
    return ""
