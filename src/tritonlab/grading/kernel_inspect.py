"""What the compiler decided for a learner's kernel, as data: the targets and their per-SM limits, the parsing of
`ptxas -v` logs, AMDGCN, TTGIR layouts and PTX/TTGIR features, the occupancy that follows, and `checked` — the
reading back of an `inspect.json` a child wrote (it ran learner code: hostile). Numpy-free and torch-free: the
parent imports this module (the service, `tritonlab inspect`, `profile`, the occupancy and TMA contracts).

The compiling itself happens in a child (kernel_compile.py): `inspect` on the learner's recorded launches,
`compile` (the trusted compile) on kernel text handed over by the parent.
"""

from __future__ import annotations

import re
from typing import Any

RESULT = "inspect.json"
STAGES_CUDA = ("ttir", "ttgir", "llir", "ptx")
STAGES_HIP = ("ttir", "ttgir", "llir", "amdgcn")

# target name -> (backend, arch, warp size)
TARGETS: dict[str, tuple[str, Any, int]] = {
    "cuda:90": ("cuda", 90, 32),
    "cuda:80": ("cuda", 80, 32),
    "hip:gfx942": ("hip", "gfx942", 64),
}

# Per-SM limits used for occupancy (public numbers from the vendors' tuning guides).
ARCH: dict[str, dict[str, int]] = {
    # H100: 64K 32-bit registers and 64 resident warps per SM, at most 32 resident blocks; 228 KB shared
    # memory per SM, 1 KB of it reserved per block; registers are allocated per warp in units of 256.
    "cuda:90": {
        "regs_per_sm": 65536,
        "max_warps": 64,
        "max_programs": 32,
        "smem_per_sm": 228 * 1024,
        "smem_reserved": 1024,
        "reg_unit": 256,
        "warp": 32,
    },
    # A100: the same register file and warp slots; 164 KB shared memory per SM.
    "cuda:80": {
        "regs_per_sm": 65536,
        "max_warps": 64,
        "max_programs": 32,
        "smem_per_sm": 164 * 1024,
        "smem_reserved": 1024,
        "reg_unit": 256,
        "warp": 32,
    },
    # MI300X CU: 4 SIMDs, each with 512 VGPRs per lane and up to 8 waves; 64 KB LDS per CU.
    "hip:gfx942": {
        "simds": 4,
        "vgprs_per_simd": 512,
        "waves_per_simd": 8,
        "max_warps": 32,
        "max_programs": 32,
        "smem_per_sm": 64 * 1024,
        "smem_reserved": 0,
        "warp": 64,
    },
}

# ---- pure parsing (parent or child) ---------------------------------------------------------------------


def parse_ptxas(log: str) -> dict[str, int]:
    """Registers, spills and shared memory from `ptxas -v` output."""
    out: dict[str, int] = {}
    m = re.search(r"Used (\d+) registers", log)
    if m:
        out["registers"] = int(m.group(1))
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    if m:
        out["spill_stores"], out["spill_loads"] = int(m.group(1)), int(m.group(2))
    m = re.search(r"(\d+) bytes smem", log)
    if m:
        out["static_smem"] = int(m.group(1))
    m = re.search(r"(\d+) bytes stack frame", log)
    if m:
        out["stack_frame"] = int(m.group(1))
    return out


def parse_amdgcn(asm: str) -> dict[str, int]:
    """VGPRs, SGPRs, spills and LDS from the AMDGCN assembly's kernel descriptor / metadata."""
    out: dict[str, int] = {}
    for key, pattern in (
        ("registers", r"\.vgpr_count:\s+(\d+)"),
        ("sgprs", r"\.sgpr_count:\s+(\d+)"),
        ("spill_stores", r"\.vgpr_spill_count:\s+(\d+)"),
        ("static_smem", r"\.group_segment_fixed_size:\s+(\d+)"),
    ):
        m = re.search(pattern, asm)
        if m:
            out[key] = int(m.group(1))
    return out


_LIST = r"\[([^\]]*)\]"


def parse_layouts(ttgir: str) -> dict[str, Any]:
    """The `#blocked` layouts and the warp count of a TTGIR module."""
    layouts = []
    for m in re.finditer(r"^(#\w+) = #ttg\.blocked<\{(.*?)\}>", ttgir, flags=re.M):
        fields = {}
        for key in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order"):
            f = re.search(key + r"\s*=\s*" + _LIST, m.group(2))
            if f:
                fields[key] = [int(v) for v in f.group(1).split(",") if v.strip()]
        layouts.append({"name": m.group(1), **fields})
    warps = re.search(r'"ttg\.num-warps"\s*=\s*(\d+)', ttgir)
    return {"blocked": layouts, "num_warps": int(warps.group(1)) if warps else None}


def occupancy(target: str, registers: int | None, smem: int, num_warps: int) -> dict[str, Any]:
    """How many programs (thread blocks / workgroups) of this kernel fit on one SM (CU) at once, and why."""
    a = ARCH[target]
    limits: dict[str, int] = {
        "warp slots": a["max_warps"] // max(num_warps, 1),
        "programs per SM": a["max_programs"],
    }
    if target.startswith("cuda"):
        if registers:
            per_warp = -(-registers * a["warp"] // a["reg_unit"]) * a["reg_unit"]
            # four sub-partitions of 16K registers each: a warp lives in one of them
            warps = 4 * ((a["regs_per_sm"] // 4) // per_warp)
            limits["registers"] = warps // max(num_warps, 1)
    elif registers:
        per_lane = -(-registers // 8) * 8
        waves_per_simd = min(a["waves_per_simd"], a["vgprs_per_simd"] // per_lane)
        limits["registers"] = (a["simds"] * waves_per_simd) // max(num_warps, 1)
    if smem:
        limits["shared memory"] = a["smem_per_sm"] // (smem + a["smem_reserved"])
    programs = min(limits.values())
    limited_by = [k for k, v in limits.items() if v == programs]
    return {
        "programs_per_sm": programs,
        "warps_per_sm": programs * num_warps,
        "max_warps_per_sm": a["max_warps"],
        "occupancy": round(programs * num_warps / a["max_warps"], 3),
        "limited_by": limited_by,
        "limits": limits,
    }


# What the compiled code uses, counted in its text: (name, stage, regular expression). The Hopper paths of
# lesson 14 — the TMA copy engine, warpgroup MMA, warp specialization — next to the Ampere ones they replace.
FEATURES: tuple[tuple[str, str, str], ...] = (
    ("tma_loads", "ptx", r"\bcp\.async\.bulk\.tensor\.\dd\.shared::\w+\.global\b"),
    ("tma_stores", "ptx", r"\bcp\.async\.bulk\.tensor\.\dd\.global\.shared::"),
    ("wgmma", "ptx", r"\bwgmma\.mma_async\."),
    ("mma_sync", "ptx", r"\bmma\.sync\."),
    ("cp_async", "ptx", r"\bcp\.async\.c[ag]\."),
    ("setmaxnreg", "ptx", r"\bsetmaxnreg\."),
    ("warp_specialize", "ttgir", r"\bttg\.warp_specialize\b"),
    ("tensormap_create", "ttgir", r"\bttng\.tensormap_create\b"),
    ("pointer_loads", "ttgir", r"\btt\.load\b|\bttg\.async_copy_global_to_local\b"),
)
FEATURE_NAMES = tuple(name for name, _stage, _pattern in FEATURES)
# FEATURES as reports name them
FEATURE_LABELS = {
    "tma_loads": "TMA loads (cp.async.bulk.tensor)",
    "tma_stores": "TMA stores (cp.async.bulk.tensor)",
    "wgmma": "warpgroup MMA (wgmma)",
    "mma_sync": "warp MMA (mma.sync)",
    "cp_async": "async copies (cp.async)",
    "setmaxnreg": "register re-allocation (setmaxnreg)",
    "warp_specialize": "warp-specialized regions",
    "tensormap_create": "descriptors built on the device",
    "pointer_loads": "loads through pointers (tt.load)",
}


def features(stages: dict[str, str]) -> dict[str, int]:
    """How often each FEATURES pattern occurs in the compiled stages (CUDA targets; 0 where a stage is absent)."""
    return {
        name: len(re.findall(pattern, stages.get(stage, "") or "", flags=re.M))
        for name, stage, pattern in FEATURES
    }


# ---- reading a result back (parent side: the child ran learner code, so its file is hostile) -------------

MAX_KERNELS = 32
MAX_TEXT = 4 << 20  # characters per stage


def _text(value: Any, most: int = 2000) -> str:
    return value[:most] if isinstance(value, str) else ""


def _int(value: Any) -> int | None:
    return value if type(value) is int and -(2**62) < value < 2**62 else None


def _ints(value: Any) -> list[int]:
    return [v for v in value[:16] if _int(v) is not None] if isinstance(value, list) else []


def _kernel(k: Any) -> dict[str, Any]:
    k = k if isinstance(k, dict) else {}
    out: dict[str, Any] = {"kernel": _text(k.get("kernel"), 200) or "kernel"}
    if "error" in k:
        return out | {
            "error": _text(k.get("error")) or "did not compile",
            "where": _text(k.get("where"), 500),
        }
    pairs = lambda d: d.items() if isinstance(d, dict) else ()  # noqa: E731
    out["signature"] = {_text(n, 100): _text(t, 40) for n, t in list(pairs(k.get("signature")))[:64]}
    out["constexprs"] = {_text(n, 100): _text(v, 200) for n, v in list(pairs(k.get("constexprs")))[:64]}
    stages = [(n, t) for n, t in pairs(k.get("stages")) if n in (*STAGES_CUDA, "amdgcn")]
    out["stages"] = {n: _text(t, MAX_TEXT) for n, t in stages}
    res = {n: v for n, v in pairs(k.get("resources")) if _int(v) is not None and v >= 0}
    out["resources"] = {_text(n, 40): v for n, v in res.items()} | {
        "shared_memory": res.get("shared_memory", 0)
    }
    if isinstance(k.get("resources"), dict) and "ptxas_log" in k["resources"]:
        out["resources"]["ptxas_log"] = _text(k["resources"]["ptxas_log"], 20000)
    feats = k.get("features") if isinstance(k.get("features"), dict) else {}
    out["features"] = {n: feats[n] for n in FEATURE_NAMES if _int(feats.get(n)) is not None and feats[n] >= 0}
    out["num_warps"] = _int(k.get("num_warps")) or 4
    out["num_stages"] = _int(k.get("num_stages")) or 0
    layout = k.get("layout") if isinstance(k.get("layout"), dict) else {}
    blocked = layout.get("blocked") if isinstance(layout.get("blocked"), list) else []
    out["layout"] = {
        "blocked": [
            {"name": _text(b.get("name"), 40) or "#blocked"}
            | {f: _ints(b.get(f)) for f in ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order")}
            for b in blocked[:16]
            if isinstance(b, dict)
        ],
        "num_warps": _int(layout.get("num_warps")),
    }
    occ = k.get("occupancy")
    if isinstance(occ, dict):
        limits = {_text(n, 40): v for n, v in pairs(occ.get("limits")) if _int(v) is not None}
        share = occ.get("occupancy")
        out["occupancy"] = {
            "programs_per_sm": _int(occ.get("programs_per_sm")) or 0,
            "warps_per_sm": _int(occ.get("warps_per_sm")) or 0,
            "max_warps_per_sm": _int(occ.get("max_warps_per_sm")) or 0,
            "occupancy": float(share) if type(share) in (int, float) and 0 <= share <= 1 else 0.0,
            "limited_by": [_text(v, 40) for v in occ.get("limited_by", [])[:8]]
            if isinstance(occ.get("limited_by"), list)
            else [],
            "limits": limits,
        }
    return out


def checked(data: Any, target: str) -> dict[str, Any]:
    """An inspect result as the parent may use it: expected keys with expected types, sizes capped; anything
    else dropped. The child imported the learner's file, which could have written inspect.json itself."""
    data = data if isinstance(data, dict) else {}
    out: dict[str, Any] = {"target": target, "kernels": [], "problems": []}
    if isinstance(data.get("case"), str):
        out["case"] = _text(data["case"], 500)
    err = data.get("import_error")
    if isinstance(err, dict):
        out["import_error"] = {
            f: _text(err.get(f), 4000) for f in ("type", "message", "where", "source", "hint")
        }
    problems = data.get("problems")
    out["problems"] = (
        [_text(p) for p in problems[:20] if isinstance(p, str)] if isinstance(problems, list) else []
    )
    kernels = data.get("kernels")
    out["kernels"] = [_kernel(k) for k in kernels[:MAX_KERNELS]] if isinstance(kernels, list) else []
    if isinstance(data.get("output"), str):
        out["output"] = _text(data["output"])
    return out
