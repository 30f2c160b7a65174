"""A 1F1B pipeline: each rank is one stage of a 4-stage model; activations go forward and
gradients back with point-to-point calls. `--wrong-stage` plants a classic bug: stage 2
receives its activations from stage 0 instead of stage 1.

    ringside torchrun scenarios/torch/four-ranks.toml -- python examples/torch/pipeline.py
    ringside torchrun scenarios/torch/four-ranks.toml -- python examples/torch/pipeline.py --wrong-stage
"""
import argparse

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--microbatches", type=int, default=4)
p.add_argument("--wrong-stage", action="store_true")
args = p.parse_args()

dist.init_process_group(backend="ringside")
stage, stages = dist.get_rank(), dist.get_world_size()
torch.manual_seed(stage)
layer = torch.nn.Linear(8, 8)
prev, nxt = stage - 1, stage + 1
if args.wrong_stage and stage == 2:
    prev = 0  # the bug: the activations come from stage 1


def forward(mb):
    x = torch.empty(4, 8)
    if stage == 0:
        x = torch.full((4, 8), float(mb))
    else:
        dist.recv(x, src=prev)
    x.requires_grad_(True)
    y = layer(x)
    if nxt < stages:
        dist.send(y.detach(), dst=nxt)
    return x, y


def backward(x, y):
    if nxt < stages:
        g = torch.empty_like(y)
        dist.recv(g, src=nxt)
    else:
        g = torch.ones_like(y)
    y.backward(g)
    if stage > 0:
        dist.send(x.grad, dst=prev)


# 1F1B: warm up with (stages - stage - 1) forwards, then alternate, then drain the backwards
warmup = min(stages - stage - 1, args.microbatches)
live = [forward(mb) for mb in range(warmup)]
for mb in range(warmup, args.microbatches):
    live.append(forward(mb))
    backward(*live.pop(0))
while live:
    backward(*live.pop(0))
grad = torch.tensor([layer.weight.grad.sum().item()], dtype=torch.float64)
dist.all_reduce(grad)
if stage == 0:
    print(f"pipeline done: gradient sum {grad.item():.6f}", flush=True)
dist.destroy_process_group()
