"""A training loop whose error handling catches a failed collective: it reports and exits 3.

    ringside torchrun scenarios/torch/preempt-rank1.toml -- python examples/torch/resilient.py
"""
import sys

import torch
import torch.distributed as dist

dist.init_process_group(backend="ringside")
rank = dist.get_rank()
grad = torch.ones(8)
try:
    for step in range(5):
        work = dist.all_reduce(grad, async_op=True)
        work.wait()
        grad.fill_(1.0)
except dist.DistBackendError as e:
    print(f"rank {rank} caught a failed all_reduce at step {step}: {str(e)[:60]}", flush=True)
    sys.exit(3)
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
