"""A tiny model trained with DistributedDataParallel: prints the final loss on rank 0.

    ringside torchrun scenarios/torch/four-ranks.toml -- python examples/torch/ddp.py --steps 5
    torchrun --nproc-per-node 4 examples/torch/ddp.py --backend gloo    # the same on gloo
"""
import argparse

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=5)
p.add_argument("--backend", default="ringside")
args = p.parse_args()

dist.init_process_group(backend=args.backend)
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(1 + rank)
for step in range(args.steps):
    x = torch.randn(32, 8, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
total = torch.tensor([loss.item()], dtype=torch.float64)
dist.all_reduce(total)
if rank == 0:
    weights = sum(p.double().sum().item() for p in model.parameters())
    print(f"final loss {total.item() / dist.get_world_size():.10f} weights {weights:.10f}")
dist.destroy_process_group()
