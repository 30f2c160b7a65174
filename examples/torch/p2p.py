"""Point-to-point calls: a ring exchange with isend/irecv, then one with batch_isend_irecv,
then a blocking send/recv between pairs; each rank checks what it received.

    ringside torchrun scenarios/torch/four-ranks.toml -- python examples/torch/p2p.py
"""
import torch
import torch.distributed as dist

dist.init_process_group(backend="ringside")
rank, world = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % world, (rank - 1) % world

out, got = torch.full((16,), float(rank)), torch.empty(16)
sent = dist.isend(out, dst=right)
received = dist.irecv(got, src=left)
sent.wait()
received.wait()
assert torch.equal(got, torch.full((16,), float(left))), got

got = torch.empty(16, dtype=torch.int64)
ops = [
    dist.P2POp(dist.isend, torch.full((16,), rank * 10, dtype=torch.int64), right),
    dist.P2POp(dist.irecv, got, left),
]
for w in dist.batch_isend_irecv(ops):
    w.wait()
assert torch.equal(got, torch.full((16,), left * 10, dtype=torch.int64)), got

peer = rank ^ 1
t = torch.full((3,), float(rank))
if rank % 2 == 0:
    dist.send(t, dst=peer)
    dist.recv(t, src=peer)
else:
    r = torch.empty(3)
    dist.recv(r, src=peer)
    dist.send(t, dst=peer)
    t = r
assert torch.equal(t, torch.full((3,), float(peer))), t
print(f"rank {rank} p2p ok", flush=True)
dist.destroy_process_group()
