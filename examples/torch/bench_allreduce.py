"""The per-call overhead of the ringside backend and the lockstep: N all_reduce of 1 KiB.

    ringside torchrun scenarios/torch/eight-ranks.toml -- python examples/torch/bench_allreduce.py 10000

Rank 0 prints the wall-clock time per call and the CPU time its process spent per call (in
the backend, torch's dispatch and the socket); every rank's wait for the others is in the
wall-clock figure, not the CPU one.
"""
import sys
import time

import torch
import torch.distributed as dist

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
dist.init_process_group(backend="ringside")
t = torch.ones(256, dtype=torch.float32)  # 1 KiB
dist.barrier()
wall, cpu = time.perf_counter(), time.process_time()
for _ in range(calls):
    dist.all_reduce(t)
    t.fill_(1.0)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
if dist.get_rank() == 0:
    n = dist.get_world_size()
    print(f"{calls} all_reduce of 1 KiB on {n} ranks: {wall / calls * 1e6:.1f} us wall per call "
          f"({wall / calls / n * 1e6:.1f} us per rank-call), "
          f"{cpu / calls * 1e6:.1f} us CPU per call on rank 0")
dist.destroy_process_group()
