//! Hierarchical allreduce for a two-level topology (hosts of several ranks, as NCCL's and
//! Horovod's hierarchical allreduce): a ring reduce-scatter inside each host, a ring allreduce
//! across hosts among the ranks with the same local index, and a ring allgather inside each host.
//!
//! The group's p = H x l members sit l to a host, host-major: member `h*l + i` is local rank i of
//! host h. The buffer is cut into p blocks, l "big blocks" of H blocks each: big block i is
//! blocks [i*H, (i+1)*H).
//! - steps 0..l-1: ring reduce-scatter of the big blocks inside the host (see `ring`): local rank
//!   i ends with big block i reduced over its host;
//! - the next 2(H-1) steps: ring allreduce of big block i, cut into its H blocks, among the
//!   local ranks i of all hosts: afterwards local rank i holds big block i reduced over everyone;
//! - the last l-1 steps: ring allgather of the big blocks inside the host.
//!
//! Every block is reduced by one owner and copied to the others, so all ranks agree bit for bit.
//! Cost, with (a_l, b_l) the intra-host link and (a, b) the inter-host one:
//! 2(l-1) a_l + 2(l-1)/l n b_l + 2(H-1) a + 2(H-1)/p n b. A group whose members do not sit on
//! hosts in equal runs (see [`local_size`]) runs with l = 1, which is the ring allreduce.

use super::ring::wrap;
use super::{Action, Ctx, Schedule, StepPlan};
use crate::Rank;

pub struct Hierarchical {
    /// l: members per host.
    local: u32,
    /// H: hosts.
    hosts: u32,
    host: u32,
    /// This member's local index on its host.
    i: u32,
}

impl Hierarchical {
    /// The schedule for `ctx` when `per_host` consecutive members share a host.
    pub fn new(ctx: Ctx, per_host: u32) -> Self {
        let local = if per_host >= 1 && ctx.p.is_multiple_of(per_host) {
            per_host
        } else {
            1
        };
        Hierarchical {
            local,
            hosts: ctx.p / local,
            host: ctx.me / local,
            i: ctx.me % local,
        }
    }

    fn member(&self, host: u32, i: u32) -> u32 {
        host * self.local + i
    }

    /// Big block `b`: the H blocks that local rank b reduces across hosts.
    fn big(&self, b: u32) -> (u32, u32) {
        (b * self.hosts, (b + 1) * self.hosts)
    }
}

impl Schedule for Hierarchical {
    fn steps(&self) -> u32 {
        2 * (self.local - 1) + 2 * (self.hosts - 1)
    }

    fn nblocks(&self) -> u32 {
        self.local * self.hosts
    }

    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let (l, hn, h, i) = (self.local, self.hosts, self.host, self.i);
        let right = self.member(h, wrap(i + 1, l));
        let left = self.member(h, wrap(i + l - 1, l));
        let inter = 2 * (hn - 1);
        if step < l - 1 {
            // reduce-scatter inside the host: local rank i ends with big block i
            let s = step;
            let send = wrap(i + 2 * l - s - 1, l);
            let recv = wrap(i + 2 * l - s - 2, l);
            plan.send(right, &[self.big(send)]);
            plan.recv(left, &[self.big(recv)], Action::Reduce);
        } else if step < l - 1 + inter {
            // ring allreduce of big block i across hosts
            let step = step - (l - 1);
            let (s, action, shift) = if step < hn - 1 {
                (step, Action::Reduce, 0)
            } else {
                (step - (hn - 1), Action::Copy, 1)
            };
            let send = wrap(h + shift + 2 * hn - s, hn);
            let recv = wrap(h + shift + 2 * hn - s - 1, hn);
            let first = i * hn;
            plan.send(
                self.member(wrap(h + 1, hn), i),
                &[(first + send, first + send + 1)],
            );
            plan.recv(
                self.member(wrap(h + hn - 1, hn), i),
                &[(first + recv, first + recv + 1)],
                action,
            );
        } else {
            // allgather of the big blocks inside the host, starting with its own
            let s = step - (l - 1) - inter;
            let send = wrap(i + l - s, l);
            let recv = wrap(i + 2 * l - s - 1, l);
            plan.send(right, &[self.big(send)]);
            plan.recv(left, &[self.big(recv)], Action::Copy);
        }
    }
}

/// How many consecutive members of a group share a host, given `ranks_per_host` world ranks
/// per host: the length of the first member's run, when every run of that length is on one host
/// and the runs cover the group; otherwise 1 (the group is treated as flat).
pub fn local_size(members: &[Rank], ranks_per_host: u32) -> u32 {
    let rph = ranks_per_host.max(1);
    let host = |r: &Rank| r.0 / rph;
    let Some(first) = members.first() else {
        return 1;
    };
    let k = members
        .iter()
        .take_while(|r| host(r) == host(first))
        .count();
    let even = members.len().is_multiple_of(k)
        && members
            .chunks(k)
            .all(|c| c.iter().all(|r| host(r) == host(&c[0])));
    if even {
        k as u32
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(r: &[u32]) -> Vec<Rank> {
        r.iter().map(|&r| Rank(r)).collect()
    }

    #[test]
    fn local_size_follows_the_hosts() {
        assert_eq!(local_size(&ranks(&[0, 1, 2, 3, 4, 5, 6, 7]), 4), 4);
        assert_eq!(local_size(&ranks(&[0, 1, 2, 3, 4, 5, 6, 7]), 1), 1);
        // a tp row of a 2x4 mesh sits on one host; a dp column across hosts
        assert_eq!(local_size(&ranks(&[4, 5, 6, 7]), 4), 4);
        assert_eq!(local_size(&ranks(&[1, 5]), 4), 1);
        // 6 ranks, 4 per host: hosts of 4 and 2 are uneven
        assert_eq!(local_size(&ranks(&[0, 1, 2, 3, 4, 5]), 4), 1);
        // every other rank of hosts of 2
        assert_eq!(local_size(&ranks(&[0, 2, 4, 6]), 2), 1);
        assert_eq!(local_size(&[], 4), 1);
    }
}
