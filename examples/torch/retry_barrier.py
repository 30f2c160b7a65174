"""Error handling that hangs: after a failed all_reduce, each rank re-enters a barrier until one
succeeds ("wait for the others before retrying the step") — which, once a peer is gone, never
happens: the loop spins for ever on a group that keeps failing.

    ringside check --torch scenarios/torch/check.toml -- python examples/torch/retry_barrier.py
"""
import torch
import torch.distributed as dist

dist.init_process_group(backend="ringside")
rank = dist.get_rank()
weights = torch.ones(16)
for step in range(6):
    grad = torch.full((16,), float(rank + step))
    try:
        dist.all_reduce(grad)
    except dist.DistBackendError:
        while True:  # the bug: no way out once a peer is gone
            try:
                dist.barrier()
                break
            except dist.DistBackendError:
                continue
        continue
    weights -= 0.01 * grad / dist.get_world_size()
print(f"rank {rank} done: {weights.sum().item():.4f}", flush=True)
dist.destroy_process_group()
