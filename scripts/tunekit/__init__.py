"""The pieces of `scripts/tune_reference_kernels.py`: the plan (cases, peers, variants), the warm-up processes
that compile in parallel, the checked and timed measurement, and the summary."""
