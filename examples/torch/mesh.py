"""A 2x2 DeviceMesh (data parallel x tensor parallel) on four ranks: an all_reduce along each
dimension, an all_gather along tp, then a world barrier; each rank checks its results.

    ringside torchrun scenarios/torch/four-ranks.toml -- python examples/torch/mesh.py
"""
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh

dist.init_process_group(backend="ringside")
rank = dist.get_rank()
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
dp, tp = mesh.get_group("dp"), mesh.get_group("tp")
# rank = 2 * dp_index + tp_index: the dp group of rank r is {r % 2, r % 2 + 2}, its tp group
# {r - r % 2, r - r % 2 + 1}
t = torch.full((4,), float(rank))
dist.all_reduce(t, group=tp)
base = rank - rank % 2
assert torch.equal(t, torch.full((4,), float(2 * base + 1))), t
u = torch.full((4,), float(rank))
dist.all_reduce(u, group=dp)
assert torch.equal(u, torch.full((4,), float(2 * (rank % 2) + 2))), u
parts = [torch.empty(2) for _ in range(2)]
dist.all_gather(parts, torch.full((2,), float(rank)), group=tp)
assert [p[0].item() for p in parts] == [float(base), float(base + 1)], parts
dist.barrier()
print(f"rank {rank} mesh ok", flush=True)
dist.destroy_process_group()
