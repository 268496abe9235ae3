"""Where learner code runs: choosing the backend, the warm zygote worker and the one forked child per run, the
limits, bubblewrap hardening (the jail), and reading a run directory without trusting it.

The sandbox knows nothing of grading: a job's mode names its child-side entry point as a string
(`zygote.ENTRIES`), so the modules it runs sit above it.
May import: `tritonlab.config`. Never imports grading, viz, perf, store, the service or an interface.
"""
