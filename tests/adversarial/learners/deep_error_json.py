# A program that fails and leaves an error.json nested 100000 levels deep, where the parent looks for the
# failing program's exception: json.loads there would raise RecursionError.
import os

DEPTH = 100_000

if __name__ == "__main__":
    with open("error.json", "w") as f:
        f.write('{"type": ' + "[" * DEPTH + "]" * DEPTH + ', "message": "x"}')
    os._exit(1)
