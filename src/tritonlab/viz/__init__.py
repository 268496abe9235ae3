"""See the kernel: record which elements each program of a learner's launch touched, and draw it.

Modules:
- `recorder.py` (CHILD side, imports triton): hooks on Triton's interpreter that log, per launch and per program
  id, every load and store — element offsets per tensor, masked lanes, out-of-bounds lanes.
- `child.py` (CHILD side): the harness's "viz" mode — build a case's guarded inputs, call the learner, save the log.
- `run.py` (PARENT side): pick a small representative case, run it in the sandbox, draw the picture.
- `logview.py`, `pictures.py`, `tiles.py`, `roofline.py` (PARENT side, numpy + matplotlib only): read the log,
  draw; `style.py`: the colours, figures and file saving they share.

The access log is plain JSON; see `recorder.AccessLog.to_json` for its shape.
"""
