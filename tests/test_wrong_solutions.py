"""Deliberately wrong learner files (tests/wrong/<exercise>/<bug>.py) are rejected with the right failure kind.

One file per bug; EXPECTED maps it to the kind its failure must carry (other kinds may come along: an unmasked
load that also reads past the input, say). Every check runs on the interpreter through the real grader, in a
sandboxed child forked from one zygote per module, with a fixed seed per file so that a failure replays.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tritonlab.grading import contracts
from tritonlab.grading.check import pipeline
from tritonlab.grading.check.replay import ROUNDING, compare_replay
from tritonlab.models import FAILURE_KINDS, Exercise
from tritonlab.runs import sandbox

WRONG = Path(__file__).resolve().parent / "wrong"
ROOT = WRONG.parent.parent

EXPECTED: dict[str, str] = {
    # lessons 3-4: grids, masks
    "pid_map/missing_mask.py": "out-of-bounds-write",
    "pid_map/off_by_one_mask.py": "out-of-bounds-write",
    "pid_map/floor_grid.py": "unwritten-output",
    "pid_map/missing_block_offset.py": "unwritten-output",
    "pid_map/wild_store.py": "crash",  # lands 2**44 elements away: SIGSEGV, every time
    # lesson 5
    "vector_add/missing_mask.py": "out-of-bounds-write",
    "vector_add/no_validation.py": "missing-validation",
    "vector_add/torch_fallback.py": "torch-fallback",
    "vector_add/writes_into_input.py": "input-modified",
    "vector_add/wrong_dtype.py": "wrong-dtype",
    "vector_add/ignored_strides.py": "wrong-result",
    "vector_add/unmasked_load.py": "out-of-bounds-read",  # every output right: the read alone fails it
    # the host computes, the kernel does nothing (issue 16): the launches alone do not produce the result
    "vector_add/host_numpy.py": "host-computed",
    "vector_add/second_thread.py": "host-computed",
    "vector_add/grader_paused.py": "host-computed",
    "vector_add/precomputed.py": "host-computed",
    # ... and the grader's child-side code is the learner's to patch: only the fresh replay child decides
    "vector_add/patches_grader.py": "host-computed",
    # Python hidden in a kernel body runs on the interpreter only: refused by name, or by lowering to TTIR
    "vector_add/numpy_in_kernel.py": "host-computed",
    "vector_add/python_in_kernel.py": "does-not-compile",
    # ... and a plain module-level float read in a kernel: right on the interpreter, never compiles for a GPU
    "vector_add/plain_global_float.py": "does-not-compile",
    "add_bias/plain_global_scale.py": "does-not-compile",
    # a case the check child reports as skipped is failed: only the parent decides what may be skipped (issue 33)
    "vector_add/skips_strided_cases.py": "crash",
    # lesson 6
    "bench_protocol/mean_not_median.py": "wrong-result",
    "bench_protocol/trimmed_mean.py": "wrong-result",  # the skewed-durations cases tell it from the median
    "bench_protocol/seconds.py": "wrong-result",
    "bench_protocol/no_sync.py": "wrong-result",
    "bench_protocol/times_warmup.py": "wrong-result",
    "bench_protocol/unconditional_sync.py": "exception",
    "bench_protocol/closure_durations.py": "host-computed",  # no kernel: the clock trace is what is replayed
    "occupancy/only_more_warps.py": "low-occupancy",
    "occupancy/computed_constant.py": "low-occupancy",
    "occupancy/missing_mask.py": "out-of-bounds-write",
    # the configuration compiled for sm_90 must be the one launched (read from the launch record)
    "occupancy/declared_not_launched.py": "low-occupancy",
    "occupancy/warps_not_launched.py": "low-occupancy",
    # lesson 7
    "copy_2d/ignored_strides.py": "wrong-result",
    "copy_2d/swapped_strides.py": "wrong-result",
    "copy_2d/missing_mask.py": "out-of-bounds-write",
    "copy_2d/not_contiguous.py": "wrong-shape",
    "copy_2d/host_contiguous.py": "host-copy",
    "copy_2d/returns_input.py": "host-computed",  # x itself for a contiguous x: the output is the input
    "transpose/ignored_strides.py": "wrong-result",
    "transpose/no_transpose.py": "wrong-result",
    "transpose/floor_grid.py": "unwritten-output",
    "transpose/view_of_column_major.py": "host-computed",  # x.t() of a column-major x: a view of the input
    "add_bias/bias_wrong_axis.py": "wrong-result",
    "add_bias/writes_into_input.py": "input-modified",
    "add_bias/torch_fallback.py": "torch-fallback",
    # lesson 8
    "row_reduce/zero_padding.py": "wrong-result",
    "row_reduce/contiguous_rows.py": "wrong-result",
    "row_reduce/first_block_only.py": "wrong-result",
    # host-chosen data in the record (issue 33): a fill, a constant allocation, a float argument
    "row_reduce/host_fill.py": "host-computed",
    "row_reduce/constant_allocations.py": "host-computed",
    "row_reduce/scalar_arguments.py": "host-computed",
    "softmax/other_zero.py": "wrong-result",
    "softmax/no_max_subtraction.py": "nan-mismatch",
    "softmax/wrong_dtype.py": "wrong-dtype",
    "softmax/ignored_row_stride.py": "nan-mismatch",  # reads the NaN padding between rows
    "softmax/torch_fallback.py": "torch-fallback",
    "softmax/host_row_stats.py": "host-computed",  # row max and sum as constant allocations (issue 33)
    "softmax/max_counts_masked_lanes.py": "nan-mismatch",  # rows far below zero: 0 / 0
    # lesson 9
    "matmul/missing_k_mask.py": "out-of-bounds-read",
    "matmul/one_k_tile.py": "wrong-result",
    "matmul/floor_grid.py": "unwritten-output",
    "matmul/swapped_strides.py": "wrong-result",
    "matmul/fp16_accumulator.py": "wrong-result",
    "matmul/torch_fallback.py": "torch-fallback",
    # every config of triton.autotune is checked, not only the one the tuner chose; pruned ones too
    "matmul/autotune_wrong_config.py": "wrong-result",
    "matmul/autotune_wrong_pruned_config.py": "wrong-result",
    "grouped_matmul_order/row_major.py": "wrong-result",
    "grouped_matmul_order/column_major.py": "wrong-result",
    "grouped_matmul_order/two_d_grid.py": "wrong-result",
    "grouped_matmul_order/divides_by_group_m.py": "unwritten-output",
    # ... and reporting a forged map from the check child does not help: the replay child records it again
    "grouped_matmul_order/forged_map.py": "wrong-result",
    "matmul_bias/bias_wrong_axis.py": "wrong-result",
    "matmul_bias/tanh_gelu.py": "wrong-result",
    "matmul_bias/relu_for_gelu.py": "wrong-result",
    "matmul_bias/unfused_epilogue.py": "too-many-launches",
    "matmul_bias/torch_epilogue.py": "torch-fallback",
    # lesson 10
    "autotune/not_autotuned.py": "no-kernel-launch",
    "autotune/two_configs.py": "wrong-result",
    "autotune/no_key.py": "wrong-result",
    "autotune/wrong_on_one_config.py": "unwritten-output",
    "autotune/host_numpy.py": "host-computed",  # the replay redoes the chosen config's launch only
    "autotune/host_pre_hook.py": "host-computed",  # a config's own pre_hook is host code
    "autotune/prune_keeps_one.py": "wrong-result",  # the prune is honoured, so it must leave something to tune
    "debug_rmsnorm/divide_by_block.py": "wrong-result",
    "debug_rmsnorm/no_upcast.py": "wrong-result",
    "debug_rmsnorm/eps_outside.py": "wrong-result",
    "debug_rmsnorm/no_eps.py": "wrong-result",
    "debug_rmsnorm/missing_mask.py": "out-of-bounds-write",
    "debug_rmsnorm/ignored_strides.py": "wrong-result",
    "debug_rmsnorm/host_contiguous_x.py": "host-copy",
    # lesson 10, outcome 10.3: the persistent matmul with each planted bug left in, or "fixed" the wrong way
    "debug_persistent/acc_not_reset.py": "wrong-result",
    "debug_persistent/step_is_sm_count.py": "unwritten-output",
    "debug_persistent/tile_row_from_tiles_m.py": "unwritten-output",
    "debug_persistent/one_program_per_tile.py": "wrong-result",
    "debug_persistent/no_k_mask.py": "out-of-bounds-read",
    # lesson 11
    "rmsnorm_backward/dw_not_reduced.py": "wrong-result",
    "rmsnorm_backward/missing_second_term.py": "wrong-result",
    "rmsnorm_backward/torch_sum.py": "torch-fallback",
    "rmsnorm_backward/missing_store_mask.py": "out-of-bounds-write",
    "rmsnorm_backward/host_numpy.py": "host-computed",  # the first call's launches are replayed
    "rmsnorm_backward/dw_float_arguments.py": "host-computed",  # dw as 48 float arguments a launch (issue 33)
    "rmsnorm_backward/state_kept_between_calls.py": "wrong-result",  # the repeat cases' second call differs
    # ... also when results are cached by input identity: the repeat is made on fresh tensors of equal values
    "rmsnorm_backward/cached_by_identity.py": "wrong-result",
    "rmsnorm_backward/layernorm_mean_term.py": "wrong-result",  # the lesson's LayerNorm dx, copied
    "autograd_wrap/no_apply.py": "wrong-result",
    "autograd_wrap/grads_swapped.py": "wrong-result",
    "autograd_wrap/one_gradient.py": "exception",
    "autograd_wrap/output_left_2d.py": "wrong-shape",
    "autograd_wrap/dc_layout_assumed.py": "wrong-result",
    "autograd_wrap/fp32_for_fp64.py": "wrong-result",
    "autograd_wrap/saves_originals.py": "wrong-result",
    "autograd_wrap/torch_backward.py": "torch-fallback",
    "autograd_wrap/host_numpy.py": "host-computed",  # dy is a case input: forward+backward are replayed
    "autograd_wrap/pure_torch.py": "torch-fallback",
    "autograd_wrap/patched_recorder.py": "host-computed",  # the check child's recorder replaced (issue 33)
    # lesson 12
    # lesson 12: the lesson builds non-causal attention with equal head counts; these are the exercise's target
    "attention_forward/causal_excludes_diagonal.py": "nan-mismatch",
    "attention_forward/loop_stops_at_block_start.py": "nan-mismatch",
    "attention_forward/no_causal_mask.py": "wrong-result",
    "attention_forward/kv_head_is_query_head.py": "out-of-bounds-read",
    "attention_forward/kv_head_modulo.py": "wrong-result",
    "attention_forward/lse_in_log2.py": "wrong-result",
    "attention_forward/lse_not_returned.py": "wrong-result",
    "attention_forward/missing_load_mask.py": "out-of-bounds-read",
    "attention_forward/no_head_validation.py": "missing-validation",
    # lse from the host (issue 33): fills, and its bits as integer arguments
    "attention_forward/lse_from_host.py": "host-computed",
    "attention_forward/lse_integer_bits.py": "host-computed",
    # lesson 14: the grid is judged from the launch record the replay ran
    "persistent_matmul/one_program_per_tile.py": "not-persistent",
    "persistent_matmul/hardcoded_sms.py": "not-persistent",  # the cases that state num_sms=3
    "persistent_matmul/no_tile_loop.py": "unwritten-output",
    "persistent_matmul/floor_chunks.py": "unwritten-output",
    "persistent_matmul/missing_k_mask.py": "out-of-bounds-read",
    # ... and a check child that lies about the grid: the parent reads the launch record, the replay runs it
    "persistent_matmul/forged_entry.py": "not-persistent",
    "persistent_matmul/forged_record.py": "host-computed",
    # ... and the TMA path from a trusted compile for sm_90 (no GPU)
    "tma_matmul/pointer_loads.py": "no-tma",
    "tma_matmul/byte_coordinates.py": "wrong-result",
    "tma_matmul/no_contiguous_copy.py": "exception",  # the interpreter: "stride must be 16-byte aligned"
    "tma_matmul/k_not_advanced.py": "wrong-result",
    "tma_matmul/one_program_per_tile.py": "not-persistent",
    "fp8_matmul/no_scales.py": "wrong-result",
    "fp8_matmul/b_scale_per_column.py": "out-of-bounds-read",
    "fp8_matmul/scale_once_at_end.py": "wrong-result",
    "fp8_matmul/missing_k_mask.py": "wrong-result",  # the interpreter reads fp8's NaN guard as 480
    "fp8_matmul/two_groups_per_step.py": "wrong-result",
    # lesson 13
    "attention_backward/non_causal.py": "wrong-result",  # the lesson's kernels: every query sees every key
    "attention_backward/dkdv_without_causal_mask.py": "wrong-result",
    "attention_backward/dq_loop_stops_before_diagonal.py": "wrong-result",
    "attention_backward/no_delta.py": "wrong-result",
    "attention_backward/no_scale_on_dq.py": "wrong-result",
    "attention_backward/torch_dq.py": "torch-fallback",
    "dropout/same_mask_every_block.py": "wrong-result",
    "dropout/keeps_with_probability_p.py": "wrong-result",
    "dropout/no_rescale.py": "wrong-result",
    "dropout/backward_ignores_offset.py": "wrong-result",
    "dropout/mask_kept_from_forward.py": "exception",  # the backward runs first: the dict has no mask yet
    "dropout/two_kernels.py": "too-many-launches",
    "cumsum/no_carry.py": "wrong-result",
    "cumsum/exclusive_scan.py": "wrong-result",
    "cumsum/fp16_accumulation.py": "wrong-result",
    "cumsum/carry_counted_twice.py": "wrong-result",
    "cumsum/ignores_column_stride.py": "wrong-result",
    "cumsum/torch_cumsum.py": "torch-fallback",
}

# A word the diagnosis must contain, where the bug has a specific one.
CAUSE_MENTIONS: dict[str, str] = {
    "pid_map/floor_grid.py": "cdiv",
    "pid_map/missing_block_offset.py": "multiply it by the block size",
    "vector_add/ignored_strides.py": "stride",
    "copy_2d/ignored_strides.py": "row stride",
    "copy_2d/swapped_strides.py": "swapped",
    "transpose/no_transpose.py": "transposed",
    "add_bias/bias_wrong_axis.py": "wrong axis",
    "softmax/other_zero.py": "other=-float('inf')",
    "softmax/no_max_subtraction.py": "subtract the row max",
    "softmax/ignored_row_stride.py": "row stride",
    "softmax/max_counts_masked_lanes.py": "count in tl.max",
    "matmul/missing_k_mask.py": "K",
    "matmul/one_k_tile.py": "loop over K",
    "matmul/swapped_strides.py": "swapped",
    "matmul/fp16_accumulator.py": "accumulate in fp32",
    "grouped_matmul_order/row_major.py": "pid_m moves fastest",
    "grouped_matmul_order/two_d_grid.py": "one program id",
    "grouped_matmul_order/forged_map.py": "pid_m moves fastest",
    "matmul_bias/bias_wrong_axis.py": "wrong axis",
    "matmul_bias/tanh_gelu.py": "tanh approximation",
    "matmul_bias/relu_for_gelu.py": "matches relu",
    "debug_rmsnorm/divide_by_block.py": "block size",
    "debug_rmsnorm/no_upcast.py": "upcast",
    "debug_rmsnorm/eps_outside.py": "outside the square root",
    "debug_rmsnorm/no_eps.py": "eps has no effect",
    "debug_rmsnorm/ignored_strides.py": "adjacent",
    "debug_persistent/acc_not_reset.py": "inside the loop",
    "debug_persistent/step_is_sm_count.py": "tl.num_programs(0)",
    "debug_persistent/tile_row_from_tiles_m.py": "t // tiles_n",
    "debug_persistent/one_program_per_tile.py": "fixed number of programs",
    "copy_2d/host_contiguous.py": "the copy is the work",
    "copy_2d/returns_input.py": "torch.empty",
    "transpose/view_of_column_major.py": "x.t()",
    "debug_rmsnorm/host_contiguous_x.py": "strides",
    "vector_add/host_numpy.py": "inside your Triton kernel",
    "vector_add/plain_global_float.py": "tl.constexpr(...)",
    "add_bias/plain_global_scale.py": "tl.constexpr(...)",
    "bench_protocol/mean_not_median.py": "mean",
    "bench_protocol/trimmed_mean.py": "trimmed mean",
    "occupancy/declared_not_launched.py": "BLOCK=BLOCK, num_warps=NUM_WARPS",
    "occupancy/warps_not_launched.py": "BLOCK=BLOCK, num_warps=NUM_WARPS",
    "matmul/autotune_wrong_config.py": "every config of triton.autotune",
    "matmul/autotune_wrong_pruned_config.py": "prune_configs_by",
    "bench_protocol/seconds.py": "seconds",
    "bench_protocol/no_sync.py": "synchronize",
    "bench_protocol/times_warmup.py": "warm-up",
    "rmsnorm_backward/dw_not_reduced.py": "one program's rows",
    "rmsnorm_backward/missing_second_term.py": "second term",
    "rmsnorm_backward/state_kept_between_calls.py": "state kept between calls",
    "rmsnorm_backward/layernorm_mean_term.py": "RMSNorm has no mean",
    "autograd_wrap/no_apply.py": ".apply",
    "autograd_wrap/one_gradient.py": "one gradient per input",
    "autograd_wrap/fp32_for_fp64.py": "FP64=True",
    "attention_forward/causal_excludes_diagonal.py": "off by one",
    "attention_forward/loop_stops_at_block_start.py": "holds the diagonal",
    "attention_forward/no_causal_mask.py": "causal mask is missing",
    "attention_forward/kv_head_modulo.py": "h // g",
    "attention_forward/lse_in_log2.py": "log2 units",
    "attention_forward/lse_not_returned.py": "return o, lse",
    "attention_forward/no_head_validation.py": "multiple of H_kv",
    "persistent_matmul/one_program_per_tile.py": "tl.num_programs(0)",
    "tma_matmul/pointer_loads.py": "make_tensor_descriptor",
    "fp8_matmul/no_scales.py": "scales were never applied",
    "fp8_matmul/missing_k_mask.py": "mask the last group",
    "attention_backward/non_causal.py": "NON-causal",
    "attention_backward/dkdv_without_causal_mask.py": "NON-causal",
    "attention_backward/dq_loop_stops_before_diagonal.py": "diagonal block",
    "attention_backward/no_delta.py": "−Δ",
    "attention_backward/no_scale_on_dq.py": "sm_scale",
    "dropout/same_mask_every_block.py": "global index",
    "dropout/keeps_with_probability_p.py": "at least p",
    "dropout/no_rescale.py": "divided by 1 − p",
    "dropout/backward_ignores_offset.py": "the same seed",
    "dropout/mask_kept_from_forward.py": "rebuild the mask",
    "cumsum/no_carry.py": "carry",
    "cumsum/exclusive_scan.py": "EXCLUSIVE",
    "cumsum/fp16_accumulation.py": "fp32",
    "cumsum/carry_counted_twice.py": "block boundary",
    "cumsum/ignores_column_stride.py": "stride",
}


def exercise_for(folder: str) -> Exercise:
    ex_id = folder.replace("_", "-")
    contract = contracts.get(ex_id)
    return Exercise(ex_id, "", WRONG / folder, contract.FUNCTION, {"en": ex_id}, {}, {}, ())


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sandbox.Zygote]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITONLAB_HOME", str(tmp_path_factory.mktemp("home")))
        z = sandbox.Zygote("interpreter")
        z.wait_ready()
        yield z
        z.close()


def test_every_wrong_file_is_listed() -> None:
    on_disk = {str(p.relative_to(WRONG)) for p in WRONG.glob("*/*.py")}
    assert on_disk == set(EXPECTED), "list each file of tests/wrong in EXPECTED, and only those"
    assert set(EXPECTED.values()) <= set(FAILURE_KINDS)
    assert set(CAUSE_MENTIONS) <= set(EXPECTED)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_wrong_solution_is_rejected(rel: str, zygote: sandbox.Zygote) -> None:
    folder = rel.split("/")[0]
    seed = zlib.crc32(rel.encode()) % 100_000 + 1
    verdict = pipeline.check(exercise_for(folder), WRONG / rel, "interpreter", zygote, seed=seed, timeout=60)
    kinds = {f.kind for f in verdict.failures}
    summary = "\n".join(
        f"{f.case} [{f.kind}] {f.message[:160]} :: {f.cause[:160]}" for f in verdict.failures[:8]
    )
    assert not verdict.passed, f"{rel} passed (seed {seed})"
    assert EXPECTED[rel] in kinds, (
        f"{rel}: expected {EXPECTED[rel]}, got {sorted(kinds)} (seed {seed})\n{summary}"
    )
    assert all(f.message for f in verdict.failures)
    if rel in CAUSE_MENTIONS:
        causes = " ".join(f.cause for f in verdict.failures if f.kind == EXPECTED[rel])
        assert CAUSE_MENTIONS[rel] in causes, f"{rel}: no cause mentions {CAUSE_MENTIONS[rel]!r}\n{summary}"


def test_host_copy_names_the_line_that_copied(zygote: sandbox.Zygote) -> None:
    """`where` points at the learner's `x = x.contiguous()`, not at the `def` line."""
    rel = "copy_2d/host_contiguous.py"
    verdict = pipeline.check(exercise_for("copy_2d"), WRONG / rel, "interpreter", zygote, seed=3, timeout=60)
    lines = (WRONG / rel).read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip() == "x = x.contiguous()")
    copies = [f for f in verdict.failures if f.kind == "host-copy"]
    assert copies and all(f.where == f"{WRONG / rel}:{line}" for f in copies), [f.where for f in copies]


def test_the_trusted_compile_runs_beside_the_check_and_ends_with_it(
    zygote: sandbox.Zygote, tmp_path: Path
) -> None:
    """occupancy's compile for sm_90 needs only the file's text, so it starts with the check run
    (grading/check/trusted_compile.py): a right file gets its compiled case; a file that cannot even be imported gets no
    compiled case, and its compile child is stopped, not left running for its 180 s limit."""
    from tritonlab.runs.zygote import descendants

    exercise = exercise_for("occupancy")
    root = Path(__file__).resolve().parent.parent
    solution = root / "course" / "06-performance" / "exercises" / "occupancy" / "solution.py"
    verdict = pipeline.check(exercise, solution, "interpreter", zygote, seed=3, timeout=60)
    assert verdict.passed, [(f.case, f.message) for f in verdict.failures]
    assert any("trusted compile" in c.name for c in verdict.cases)
    assert verdict.timings["compile_s"] > 0
    broken = tmp_path / "occupancy.py"
    broken.write_text(solution.read_text() + "\nraise RuntimeError('broken at import')\n")
    verdict = pipeline.check(exercise, broken, "interpreter", zygote, seed=3, timeout=60)
    assert not verdict.passed and {f.kind for f in verdict.failures} == {"exception"}
    assert not any("trusted compile" in c.name for c in verdict.cases)
    assert descendants(zygote.proc.pid) == []  # the compile child is gone with the check


@pytest.mark.parametrize(
    "text",
    [b"BLOCK = " + b"-" * 100_000 + b"1\n", b"\xff\xfe = 1\n", b"BLOCK = 1\x00\n"],
    ids=["parser-bomb", "bad-utf8", "null-byte"],
)
def test_hostile_text_gets_a_verdict_from_the_trusted_compile(
    text: bytes, zygote: sandbox.Zygote, tmp_path: Path
) -> None:
    """The trusted compile reads the text before the check run has said whether it imports, and the check
    writes that text into its run directory: text that makes Python's parser run out of memory, bytes that are
    not UTF-8 (written back byte for byte, grading/check/job.snapshot) or a NUL byte must end as a failed verdict, never
    as an exception in the server or the CLI."""
    broken = tmp_path / "occupancy.py"
    broken.write_bytes(text)
    verdict = pipeline.check(exercise_for("occupancy"), broken, "interpreter", zygote, seed=3, timeout=60)
    assert not verdict.passed and verdict.failures


def test_the_early_judgement_holds_only_when_the_replay_changes_nothing(zygote: sandbox.Zygote) -> None:
    """The judge runs beside the replay on a copy of the check child's result (grading/check/judge.EarlyJudge). A file that
    silences every check in its own process returns right values, so that early judgement passes it: only the
    replay finds the host's work, and the early judgement must then be dropped. A right file keeps it."""
    exercise = exercise_for("vector_add")
    cheat = pipeline.check(exercise, WRONG / "vector_add/patches_grader.py", "interpreter", zygote, seed=5)
    assert "host-computed" in {f.kind for f in cheat.failures}, cheat.failures
    assert cheat.timings["judged_early"] is False
    solution = next(ROOT.glob("course/*/exercises/vector-add/solution.py"))
    right = pipeline.check(exercise, solution, "interpreter", zygote, seed=5)
    assert right.passed and right.timings["judged_early"] is True, right.failures


def test_results_of_two_executions_are_compared_within_rounding_and_nothing_more() -> None:
    """grouped-matmul-order's order cases run through the interpreter in a GPU check's child, and compiled in
    the replay: rounding differences are allowed (found on the H200), a host-written result is not."""
    from tritonlab.grading import contracts as C

    rng = np.random.default_rng(0)
    for dtype in ("float32", "float16", "bfloat16"):
        exact = rng.standard_normal((40, 24))
        mine = C.to_storage(exact, dtype)
        values = C.decode(mine, dtype).astype(np.float64)
        unit = C.UNIT_ROUNDOFF[dtype]
        nudged = C.to_storage(values * (1 + 2 * unit * rng.choice([-1, 1], values.shape)), dtype)
        entry = {"arrays": [mine], "outputs": [{"dtype": dtype}]}
        assert compare_replay(entry, [nudged], tolerant=ROUNDING) == "", dtype
        assert compare_replay(entry, [nudged], tolerant=False) != "", dtype  # bit for bit: differs
        wrong = C.to_storage(values + 0.01 * np.abs(values).max(), dtype)
        assert "differ" in compare_replay(entry, [wrong], tolerant=ROUNDING), dtype
    order = [c for c in contracts.get("grouped-matmul-order").cases(rng, "gpu") if c.extra.get("order")]
    assert order and all(contracts.get("grouped-matmul-order").interpreted_on_gpu(c) for c in order)
