//! The yardstick of the speed benches: ring allreduce as a bare event loop (a binary heap of
//! (time, seq) over a slab, one buffer and one step counter per rank, alpha-beta timing, no
//! protocol), shared by `ring_bench` and the `user_path` bench.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

struct Chunk {
    to: u32,
    step: u32,
    value: f32,
}

/// A binary heap of (time, insertion seq) over a slab of chunks.
#[derive(Default)]
struct BareQueue {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slab: Vec<Option<Chunk>>,
    free: Vec<usize>,
    seq: u64,
}

impl BareQueue {
    fn push(&mut self, t: u64, c: Chunk) {
        self.seq += 1;
        let i = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(c);
                i
            }
            None => {
                self.slab.push(Some(c));
                self.slab.len() - 1
            }
        };
        self.heap.push(Reverse((t, self.seq, i)));
    }

    fn pop(&mut self) -> Option<(u64, Chunk)> {
        let Reverse((t, _, i)) = self.heap.pop()?;
        self.free.push(i);
        self.slab[i].take().map(|c| (t, c))
    }
}

/// Ring allreduce of one f32 per chunk on `p` ranks as a bare event loop: the messages it
/// delivers.
pub fn bare_loop(p: u32, latency: u64, ser: u64) -> u64 {
    let steps = 2 * (p - 1);
    let mut buf: Vec<Vec<f32>> = (0..p).map(|r| vec![r as f32; p as usize]).collect();
    let mut step = vec![0u32; p as usize];
    let mut send_free = vec![0u64; p as usize];
    let mut queue = BareQueue::default();
    for r in 0..p {
        send_free[r as usize] = ser;
        let value = buf[r as usize][r as usize];
        let c = Chunk {
            to: (r + 1) % p,
            step: 0,
            value,
        };
        queue.push(latency + ser, c);
    }
    let mut delivered = 0;
    while let Some((t, c)) = queue.pop() {
        delivered += 1;
        let r = c.to as usize;
        let s = step[r];
        assert_eq!(s, c.step);
        let block = ((c.to + 2 * p - s - 1) % p) as usize;
        if s < p - 1 {
            buf[r][block] += c.value;
        } else {
            buf[r][block] = c.value;
        }
        step[r] = s + 1;
        if s + 1 < steps {
            let start = t.max(send_free[r]);
            send_free[r] = start + ser;
            let value = buf[r][block];
            let c = Chunk {
                to: (c.to + 1) % p,
                step: s + 1,
                value,
            };
            queue.push(start + latency + ser, c);
        }
    }
    delivered
}
