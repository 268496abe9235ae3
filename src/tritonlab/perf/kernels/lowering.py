"""Compile the reference kernels for a GPU target on a machine without one, and read what the compiler emitted.

Used by the CPU tests (``tests/test_reference_lowering.py``) to hold the Hopper claims of the reference kernels:
that their matrix products lower to ``wgmma`` for ``cuda:90`` and that their descriptor loads become TMA copies
(``cp.async.bulk.tensor``), without a GPU. A host function is called on CPU tensors with every kernel launch
recorded instead of run (:func:`record_launches`); each recorded launch is then compiled with
``triton.compile`` for ``GPUTarget("cuda", 90, 32)`` (:func:`compile_launch`) with the signature, constants and
16-byte divisibility hints that Triton's own launcher would give it.

``JITFunction.run`` is replaced only inside :func:`record_launches` and restored on the way out (Triton has no
public way to see a launch's arguments without a driver; ``grading.triton_api`` says the same of its hook).
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

Launch = tuple[Any, tuple[Any, ...], dict[str, Any]]
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


@contextlib.contextmanager
def _recording(launches: list[Launch]) -> Iterator[None]:
    from triton.runtime.jit import JITFunction

    original = JITFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> None:
        launches.append((self, args, dict(kwargs)))

    JITFunction.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        JITFunction.run = original  # type: ignore[method-assign]


def record_launches(call: Callable[[], Any]) -> list[Launch]:
    """Run ``call()`` (a host function on CPU tensors) with every Triton launch recorded, not run."""
    launches: list[Launch] = []
    with _recording(launches):
        call()
    return launches


def _bind(jit_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict, dict, dict, dict]:
    from triton.runtime.jit import mangle_type

    params = inspect.signature(jit_fn.fn).parameters
    options = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
    bound = inspect.signature(jit_fn.fn).bind(*args, **{k: v for k, v in kwargs.items() if k in params})
    bound.apply_defaults()
    signature: dict[str, str] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    attrs: dict[tuple[int, ...], list] = {}
    for i, (name, value) in enumerate(bound.arguments.items()):
        annotation = str(params[name].annotation)
        integer = isinstance(value, int) and not isinstance(value, bool)
        if "constexpr" in annotation or value is None or (integer and value == 1):
            signature[name] = "constexpr"
            constexprs[(i,)] = value
            continue
        signature[name] = mangle_type(value)
        aligned = (integer and value % 16 == 0) or (hasattr(value, "data_ptr") and value.data_ptr() % 16 == 0)
        if aligned:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return signature, constexprs, attrs, options


def compile_launch(launch: Launch, arch: int = 90) -> Any:
    """Compile one recorded launch for ``cuda:<arch>`` (needs Triton's bundled ptxas, no GPU)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    jit_fn, args, kwargs = launch
    signature, constexprs, attrs, options = _bind(jit_fn, args, kwargs)
    gluon_kernel = getattr(jit_fn, "is_gluon", lambda: False)()
    if gluon_kernel:  # a Gluon kernel (attention_ws) parses with Gluon's frontend
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
    source = ASTSource(fn=jit_fn, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options)


def _ptxas_resources(ptx: str, arch: int) -> dict[str, int | bool]:
    """Registers, spills, stack frame from Triton's bundled ``ptxas -v`` on the PTX (as `inspect` reads them), and
    whether ptxas serialised the wgmma products."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from tritonlab.grading import triton_api
    from tritonlab.grading.kernel_inspect import parse_ptxas

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        proc = subprocess.run(
            [triton_api.ptxas_path(arch), "-v", f"--gpu-name=sm_{arch}{'a' if arch == 90 else ''}", str(src),
             "-o", os.path.join(tmp, "k.o")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    log = proc.stdout + proc.stderr
    # ptxas's C7514 note: a non-wgmma instruction touches an accumulator while its product is in flight (a copy
    # at a loop's back edge, say), so ptxas runs every wgmma of the kernel one after another
    return {**parse_ptxas(log), "wgmma_serialized": "wgmma.mma_async instructions are serialized" in log}


def ptx_facts(compiled: Any, resources: bool = False) -> dict[str, Any]:
    """What the PTX and the compile's metadata say: the kernel's name, wgmma and TMA instruction counts,
    mma.sync count (the pre-Hopper tensor-core path), fp32 multiplies and FMAs, global loads, TMA reductions
    and element atomics, the wgmma waits' depths and `setmaxnreg` count, shared memory; with ``resources`` also registers and
    spills from ``ptxas -v``."""
    ptx = compiled.asm["ptx"]
    meta = compiled.metadata
    facts: dict[str, Any] = {
        "name": getattr(meta, "name", "?"),
        "wgmma": len(re.findall(r"\bwgmma\.mma_async", ptx)),
        "wgmma_fp8": len(re.findall(r"\bwgmma\.mma_async\S*\.e4m3", ptx)),
        "mma_sync": len(re.findall(r"\bmma\.sync", ptx)),
        # Triton 3.6 writes shared::cluster, 3.9 shared::cta
        "tma_load": len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared::\w+\.global", ptx)),
        "tma_store": len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared", ptx)),
        # tiles added into global memory by the TMA unit, and element-wise atomics
        "tma_reduce": len(re.findall(r"cp\.reduce\.async\.bulk\.tensor", ptx)),
        "atomics": len(re.findall(r"\b(?:red|atom)\.global", ptx)),
        # the wgmma waits' depths (wait_group N keeps N products in flight while the warpgroup does other work),
        # and register reallocation between warpgroups (a warp-specialized producer/consumer split)
        "wgmma_waits": sorted({int(n) for n in re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx)}),
        "setmaxnreg": len(re.findall(r"\bsetmaxnreg", ptx)),
        "setmaxnreg_values": sorted(
            {int(n) for n in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)}
        ),
        "num_warps": getattr(meta, "num_warps", None),
        # fp32 multiplies and fused multiply-adds, loads from global memory other than TMA copies (each counted
        # once in the text: an instruction inside a loop is one, however often the loop runs)
        "f32_mul": len(re.findall(r"\bmul\.(?:rn\.)?f32\b", ptx)),
        "f32_fma": len(re.findall(r"\bfma\.rn\.f32\b", ptx)),
        "ld_global": len(re.findall(r"\bld\.global\b", ptx)),
        "shared": getattr(meta, "shared", None),
    }
    if resources:
        arch = re.search(r"\d+", str(getattr(meta, "arch", "90")))
        facts.update(_ptxas_resources(ptx, int(arch.group()) if arch else 90))
    return facts


def lower(call: Callable[[], Any], arch: int = 90, resources: bool = False) -> list[dict[str, Any]]:
    """:func:`ptx_facts` of every kernel ``call()`` launches, compiled for ``cuda:<arch>``."""
    return [ptx_facts(compile_launch(launch, arch), resources) for launch in record_launches(call)]
