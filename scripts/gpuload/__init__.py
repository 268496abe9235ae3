"""scripts/load_gpu.py's parts: the workload plan, the web learners, the utilisation sampler, the report."""
