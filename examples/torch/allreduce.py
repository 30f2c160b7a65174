"""Two all_reduces and a broadcast: the smallest program ringside torchrun runs."""
import torch
import torch.distributed as dist

dist.init_process_group(backend="ringside")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.arange(4, dtype=torch.float32) + rank
dist.all_reduce(t)
expected = torch.arange(4, dtype=torch.float32) * world + sum(range(world))
assert torch.equal(t, expected), (t, expected)
dist.broadcast(t, src=0)
print(f"rank {rank}: {t.tolist()}")
dist.destroy_process_group()
