"""Results land in the program's tensors whatever their layout and dtype: views with an offset
(written in place, their neighbours untouched), strided views, dtypes that travel converted,
and AVG."""
import torch
import torch.distributed as dist

dist.init_process_group(backend="ringside")
rank, world = dist.get_rank(), dist.get_world_size()
total = float(sum(range(1, world + 1)))

base = torch.zeros(8)
view = base[2:6]
view.fill_(rank + 1)
dist.all_reduce(view)
assert torch.equal(view, torch.full((4,), total)), view
assert base[:2].eq(0).all() and base[6:].eq(0).all(), base

m = torch.zeros(4, 2)
col = m[:, 1]
col.fill_(rank + 1)
dist.all_reduce(col)
assert torch.equal(col, torch.full((4,), total)), m
assert m[:, 0].eq(0).all(), m

h = torch.full((3,), rank + 1, dtype=torch.float16)
dist.all_reduce(h)
assert h.dtype == torch.float16 and torch.equal(h, torch.full((3,), total, dtype=torch.float16)), h

i = torch.full((5,), rank + 1, dtype=torch.int32)
dist.all_reduce(i, op=dist.ReduceOp.MAX)
assert torch.equal(i, torch.full((5,), world, dtype=torch.int32)), i

d = torch.full((2,), rank + 1, dtype=torch.float64)
dist.all_reduce(d, op=dist.ReduceOp.AVG)
assert torch.equal(d, torch.full((2,), total / world, dtype=torch.float64)), d

wide = torch.zeros(2 * world + 2, dtype=torch.int64)
dist.all_gather_into_tensor(wide[1:-1], torch.full((2,), rank, dtype=torch.int64))
assert wide.tolist() == [0] + [r for r in range(world) for _ in range(2)] + [0], wide

print(f"rank {rank}: layouts ok")
dist.destroy_process_group()
