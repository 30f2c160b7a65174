//! The network model: when does a message leave, and when does it arrive.
//!
//! `alpha-beta`: a message of n bytes costs `latency + n / bandwidth`. Each rank has one send
//! port and one receive port (single-port, full duplex): its sends serialize on the send port,
//! and messages arriving together serialize on the receive port. With `ports = k`, each rank
//! has k of each: a message takes the port of its side that is free first (the lowest-numbered
//! among equals), so k messages of a rank travel at once and the k+1-th waits for one of them.
//! Ranks on the same host use the `intra_host` link when one is given.
//!
//! `loggp`, with the semantics of LogGOPSim (Hoefler, Schneider & Lumsdaine; its default network,
//! which has no congestion). Per rank there is a CPU, which pays the overheads, and a NIC with a
//! send gap and a receive gap. A message of k bytes issued at t:
//! - starts when the sender's CPU is free and its send gap has passed: s = max(t, cpu, gap_s);
//!   the CPU is then busy until s + o, and the next send waits until s + g + (k-1)G;
//! - its first byte reaches the receiver at s + o + L;
//! - the receiver takes it when its CPU is free and its receive gap has passed:
//!   r = max(s + o + L, cpu, gap_r); its CPU is busy until r + o + (k-1)G (the bytes are
//!   charged at the receiver), which is when the message is handed to the process, and the
//!   next message waits until r + g + (k-1)G.
//!
//! Without contention a message thus takes 2o + L + (k-1)G; a zero-byte message 2o + L. Every
//! message is eager (LogGOPSim's rendezvous above `S` bytes is not modelled), and a send is
//! booked when it is issued: one waiting for its gap holds the CPU slot it will use, where
//! LogGOPSim would let a message that arrives meanwhile take the CPU first.

use crate::scenario::{NetModel, Scenario};
use crate::units::{later, Bandwidth, Nanos, PerByte};

#[derive(Clone, Copy, Debug)]
struct LinkParams {
    latency: Nanos,
    bandwidth: Bandwidth,
    /// The last message size asked for and its serialization time: a collective sends chunks
    /// of one size again and again, and this spares a 64-bit division per message.
    last: (u64, Nanos),
}

impl LinkParams {
    fn new(latency: Nanos, bandwidth: Bandwidth) -> LinkParams {
        LinkParams {
            latency,
            bandwidth,
            last: (0, bandwidth.transfer_ns(0)),
        }
    }

    /// `bandwidth.transfer_ns(bytes)`, remembered for the next message of the same size.
    #[inline(always)]
    fn serialization(&mut self, bytes: u64) -> Nanos {
        if self.last.0 != bytes {
            self.last = (bytes, self.bandwidth.transfer_ns(bytes));
        }
        self.last.1
    }
}

#[derive(Clone, Copy, Debug)]
struct LogGp {
    l: Nanos,
    o: Nanos,
    g: Nanos,
    gb: PerByte,
}

/// When a message leaves, and when it reaches the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub depart: Nanos,
    /// alpha-beta: its last byte reaches the receiver; LogGP: its first byte.
    pub arrive: Nanos,
}

pub struct Net {
    inter: LinkParams,
    intra: Option<LinkParams>,
    ranks_per_host: u32,
    loggp: Option<LogGp>,
    pub jitter: Nanos,
    pub retransmit: Nanos,
    /// Ports of each side per rank (1 with LogGP).
    ports: usize,
    /// When each send port (LogGP: each rank's send gap) is free again: rank r's are
    /// `r * ports..(r + 1) * ports`.
    send_free: Vec<Nanos>,
    /// When each receive port (LogGP: each rank's receive gap) is free again, as `send_free`.
    recv_free: Vec<Nanos>,
    /// LogGP: when each rank's CPU is free of send and receive overheads.
    cpu_free: Vec<Nanos>,
}

impl Net {
    pub fn new(s: &Scenario) -> Net {
        let n = &s.network;
        let p = s.world.size as usize;
        let ports = n.ports.max(1) as usize;
        let loggp = match n.model {
            NetModel::Loggp => Some(LogGp {
                l: n.loggp_l.map_or(0, |d| d.0),
                o: n.loggp_o.map_or(0, |d| d.0),
                g: n.loggp_g.map_or(0, |d| d.0),
                gb: n.loggp_gb.unwrap_or_default(),
            }),
            NetModel::AlphaBeta => None,
        };
        Net {
            inter: LinkParams::new(n.latency.0, n.bandwidth),
            intra: n
                .intra_host
                .map(|l| LinkParams::new(l.latency.0, l.bandwidth)),
            ranks_per_host: s.world.ranks_per_host.max(1),
            loggp,
            jitter: n.jitter.0,
            retransmit: n.retransmit_timeout.0.max(1),
            ports,
            send_free: vec![0; p * ports],
            recv_free: vec![0; p * ports],
            cpu_free: vec![0; p],
        }
    }

    /// Of rank `r`'s ports in `free`, the one free first (the lowest-numbered among equals).
    #[inline(always)]
    fn port(&self, free: &[Nanos], r: usize) -> usize {
        let k = self.ports;
        if k == 1 {
            return r;
        }
        let mine = &free[r * k..(r + 1) * k];
        let mut best = 0;
        for (i, &t) in mine.iter().enumerate().skip(1) {
            if t < mine[best] {
                best = i;
            }
        }
        r * k + best
    }

    #[inline(always)]
    fn link(&mut self, from: u32, to: u32) -> &mut LinkParams {
        match &mut self.intra {
            Some(l) if from / self.ranks_per_host == to / self.ranks_per_host => l,
            _ => &mut self.inter,
        }
    }

    /// Plans a send issued at `t`; `extra` is added wire delay (faults, jitter).
    #[inline(always)]
    pub fn send(&mut self, t: Nanos, from: u32, to: u32, bytes: u64, extra: Nanos) -> Timing {
        let f = from as usize;
        match self.loggp {
            Some(lg) => {
                let start = t.max(self.cpu_free[f]).max(self.send_free[f]);
                let wire = lg.gb.ns_for(bytes.saturating_sub(1));
                self.cpu_free[f] = later(start, lg.o);
                self.send_free[f] = later(later(start, lg.g), wire);
                Timing {
                    depart: start,
                    arrive: later(later(later(start, lg.o), lg.l), extra),
                }
            }
            None => {
                let port = self.port(&self.send_free, f);
                let link = self.link(from, to);
                let ser = link.serialization(bytes);
                let latency = link.latency;
                let start = t.max(self.send_free[port]);
                self.send_free[port] = later(start, ser);
                Timing {
                    depart: start,
                    arrive: later(later(later(start, latency), ser), extra),
                }
            }
        }
    }

    /// When the bytes of a message of `bytes` from `from` to `to` that departed at `depart`
    /// have left the sender (an eager send completes then): alpha-beta, once its serialization
    /// time n / bandwidth has passed on the send port; LogGP, once the sender paid its
    /// overhead o and the bytes' (k-1)G.
    pub fn sent_at(&mut self, depart: Nanos, from: u32, to: u32, bytes: u64) -> Nanos {
        match self.loggp {
            Some(lg) => depart + lg.o + lg.gb.ns_for(bytes.saturating_sub(1)),
            None => depart + self.link(from, to).serialization(bytes),
        }
    }

    /// When a message of `bytes` from `from` that reached `to` at `arrive` is handed to the
    /// process, given what else the receive side is doing; reserves the receive side until
    /// then. Taking it in costs, alpha-beta: its serialization time on the receive port;
    /// LogGP: the receiver's o + (k-1)G.
    #[inline(always)]
    pub fn receive(&mut self, from: u32, to: u32, arrive: Nanos, bytes: u64) -> Nanos {
        let r = to as usize;
        match self.loggp {
            Some(lg) => {
                // the CPU pays o and the bytes' (k-1)G; the receive gap g + (k-1)G
                let wire = lg.gb.ns_for(bytes.saturating_sub(1));
                let recv_cost = later(lg.o, wire);
                let start = arrive.max(self.cpu_free[r]).max(self.recv_free[r]);
                self.cpu_free[r] = later(start, recv_cost);
                self.recv_free[r] = later(later(start, lg.g), wire);
                later(start, recv_cost)
            }
            None => {
                let port = self.port(&self.recv_free, r);
                let recv_cost = self.link(from, to).serialization(bytes);
                // the bytes stream in during [arrive - cost, arrive] unless the port is busy
                let done = arrive.max(later(self.recv_free[port], recv_cost));
                self.recv_free[port] = done;
                done
            }
        }
    }

    /// Adds a node after the ranks (the store of a store rendezvous), with its own ports; it
    /// sits on its own host.
    pub fn add_node(&mut self) {
        let k = self.ports;
        self.send_free.extend(std::iter::repeat_n(0, k));
        self.recv_free.extend(std::iter::repeat_n(0, k));
        self.cpu_free.push(0);
    }

    /// Forgets a dead rank's port state.
    pub fn reset_rank(&mut self, rank: u32, now: Nanos) {
        let (r, k) = (rank as usize, self.ports);
        self.send_free[r * k..(r + 1) * k].fill(now);
        self.recv_free[r * k..(r + 1) * k].fill(now);
        self.cpu_free[r] = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse;

    fn loggp(p: u32) -> Net {
        let s = parse(
            &format!(
                "name = \"n\"\n[world]\nsize = {p}\n[network]\nmodel = \"loggp\"\n\
                 L = \"2500ns\"\no = \"1500ns\"\ng = \"1000ns\"\nG = \"6ns\"\n\
                 [workload]\n[[workload.ops]]\nop = \"barrier\"\n"
            ),
            "net.toml",
        )
        .expect("valid");
        Net::new(&s)
    }

    /// Sends at `t` and receives at once: when the receiver's process has the message.
    fn one(net: &mut Net, t: Nanos, from: u32, to: u32, bytes: u64) -> Nanos {
        let m = net.send(t, from, to, bytes, 0);
        net.receive(from, to, m.arrive, bytes)
    }

    #[test]
    fn loggp_message_costs() {
        // zero and one byte: 2o + L; k bytes: 2o + L + (k-1)G
        assert_eq!(one(&mut loggp(2), 0, 0, 1, 0), 5_500);
        assert_eq!(one(&mut loggp(2), 0, 0, 1, 1), 5_500);
        assert_eq!(one(&mut loggp(2), 0, 0, 1, 1001), 5_500 + 6_000);
    }

    #[test]
    fn loggp_sends_wait_for_the_cpu_and_the_gap() {
        let mut net = loggp(3);
        // small messages: the next send waits max(o, g) = o
        assert_eq!(net.send(0, 0, 1, 1, 0).depart, 0);
        assert_eq!(net.send(0, 0, 2, 1, 0).depart, 1_500);
        // a large message holds the gap for g + (k-1)G
        let mut net = loggp(3);
        net.send(0, 0, 1, 1001, 0);
        assert_eq!(net.send(0, 0, 2, 1, 0).depart, 1_000 + 6_000);
    }

    #[test]
    fn loggp_receives_serialize_on_the_receiver() {
        let mut net = loggp(3);
        let a = net.send(0, 0, 2, 1001, 0);
        let b = net.send(0, 1, 2, 1, 0);
        assert_eq!((a.arrive, b.arrive), (4_000, 4_000));
        // the first pays o + 1000 G on the CPU; the second waits for the CPU
        assert_eq!(net.receive(0, 2, a.arrive, 1001), 4_000 + 1_500 + 6_000);
        assert_eq!(net.receive(1, 2, b.arrive, 1), 11_500 + 1_500);
        // a send of the receiver waits for its CPU too
        assert_eq!(net.send(4_000, 2, 0, 1, 0).depart, 13_000);
    }
}
