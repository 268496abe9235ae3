# Tries to read reference solutions (to unlock "show solution" or to pass by copying one): the checked
# exercise's, and one in the course folder the sandbox shows. open() each and import it by path.
# (Layer 1 stops this from Python only; a subprocess could still read them there.)
import importlib.util

for number, path in enumerate(["__SOLUTION__", "__COURSE_SOLUTION__"]):
    try:
        text = open(path).read()
        print(f"LEAK open {path}" if "def " in text else "refused open (empty)")
    except OSError as exc:
        print(f"refused open: {type(exc).__name__}")
    try:
        spec = importlib.util.spec_from_file_location(f"stolen{number}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        public = [n for n in vars(module) if not n.startswith("_")]
        print(f"LEAK import {path}" if public else "refused import (empty)")
    except (OSError, ImportError) as exc:
        print(f"refused import: {type(exc).__name__}")
