"""tritonlab: a practical course in Triton GPU programming.

Importing this package is cheap: torch and triton are imported only by the modules that run kernels
(the child-side harness, the benchmark and the reference kernels), never by the CLI at start-up.
"""

__version__ = "0.1.0"
