"""Point-to-point calls: a ring exchange with isend/irecv, then one with batch_isend_irecv, then
several isend/irecv outstanding at once with the recvs first, a batch with the recv first, and a
blocking send/recv between pairs; each rank checks what it received.

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

# several sends and recvs outstanding at once, the recvs posted first on every rank (gloo runs
# them side by side; run one at a time they would wait for each other for ever), waited for in
# reverse order
first, second = torch.empty(8), torch.empty(8)
works = [
    dist.irecv(first, src=left),
    dist.irecv(second, src=left),
    dist.isend(torch.full((8,), rank + 0.5), dst=right),
    dist.isend(torch.full((8,), rank + 0.25), dst=right),
]
for w in reversed(works):
    w.wait()
assert torch.equal(first, torch.full((8,), left + 0.5)), first
assert torch.equal(second, torch.full((8,), left + 0.25)), second

# batch_isend_irecv with the recv first
got = torch.empty(4)
ops = [dist.P2POp(dist.irecv, got, left), dist.P2POp(dist.isend, torch.full((4,), -rank * 1.0), right)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
assert torch.equal(got, torch.full((4,), -left * 1.0)), got

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
