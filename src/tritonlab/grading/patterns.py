"""Bit patterns that mark memory the learner's kernel must not touch, or has not written.

Shared by the child (guards.py fills buffers with them) and the parent (the grader recognises them in
outputs). NaN payloads for floats, so arithmetic on them stays NaN; distinct payloads so the parent can tell
poison (never written) from the input guard (read out of bounds). Values are unsigned, element-wide.
"""

POISON = {
    "float32": 0x7FA5A5A5,
    "float16": 0x7DA5,
    "bfloat16": 0x7FA5,
    "float64": 0x7FF4A5A5A5A5A5A5,
    "int32": 0x5A5A5A5A,
    "int64": 0x5A5A5A5A5A5A5A5A,
    "int16": 0x5A5A,
    "int8": 0x5A,
    "uint8": 0x5A,
    "bool": 0x01,
    # fp8 e4m3fn has one NaN per sign (0x7F, 0xFF), so its marks cannot all be NaN and distinct: inputs only
    # (lesson 14) — the input guard is NaN (an out-of-bounds read poisons the sum), poison the other NaN
    "float8_e4m3fn": 0xFF,
}
INPUT_GUARD = {
    "float32": 0x7FC0BAD0,
    "float16": 0x7E0B,
    "bfloat16": 0x7FCB,
    "float64": 0x7FF8BAD0BAD0BAD0,
    "int32": 0x3BAD0BAD,
    "int64": 0x3BAD0BAD3BAD0BAD,
    "int16": 0x3BAD,
    "int8": 0x3B,
    "uint8": 0x3B,
    "bool": 0x01,
    "float8_e4m3fn": 0x7F,
}
OUTPUT_GUARD = {
    "float32": 0x7FB0B0B0,
    "float16": 0x7DB0,
    "bfloat16": 0x7FB0,
    "float64": 0x7FF4B0B0B0B0B0B0,
    "int32": 0x4B0B0B0B,
    "int64": 0x4B0B0B0B4B0B0B0B,
    "int16": 0x4B0B,
    "int8": 0x4B,
    "uint8": 0x4B,
    "bool": 0x01,
    "float8_e4m3fn": 0xFE,  # -448: finite, recognised by its bits
}
