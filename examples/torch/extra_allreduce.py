"""A rank-dependent branch: rank 1 also all-reduces its loss for logging at step 2, which the
other ranks do not, so its next call meets their gradient all_reduce.

    ringside torchrun scenarios/torch/four-ranks.toml -- python examples/torch/extra_allreduce.py
"""
import torch
import torch.distributed as dist

dist.init_process_group(backend="ringside")
rank = dist.get_rank()
grad = torch.ones(64)
for step in range(4):
    loss = torch.tensor([float(step)])
    if rank == 1 and step == 2:
        dist.all_reduce(loss)  # logging, on one rank only
    dist.all_reduce(grad)
    grad.fill_(1.0)
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
