//! The network model: when does a message leave, and when does it arrive.
//!
//! `alpha-beta`: a message of n bytes costs `latency + n / bandwidth`. Each rank has one send
//! port and one receive port (single-port, full duplex): its sends serialize on the send port,
//! and messages arriving together serialize on the receive port. Ranks on the same host use the
//! `intra_host` link when one is given.
//!
//! `loggp` (as LogGOPSim): the sender's CPU spends `o` per message, consecutive injections of a
//! rank are at least `g` apart, a message of k bytes spends `(k-1)G` on the wire after its first
//! byte, travels `L`, and costs the receiver's CPU another `o`. A zero-byte message takes 2o + L.

use crate::scenario::{NetModel, Scenario};
use crate::units::{Bandwidth, Nanos};

#[derive(Clone, Copy, Debug)]
struct LinkParams {
    latency: Nanos,
    bandwidth: Bandwidth,
}

#[derive(Clone, Copy, Debug)]
struct LogGp {
    l: Nanos,
    o: Nanos,
    g: Nanos,
    gb: Nanos,
}

/// When a message leaves and when its last byte reaches the receiver's NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub depart: Nanos,
    pub arrive: Nanos,
    /// How long the message occupies the receive side (port, or CPU overhead for LogGP).
    pub recv_cost: Nanos,
}

pub struct Net {
    model: NetModel,
    inter: LinkParams,
    intra: Option<LinkParams>,
    ranks_per_host: u32,
    loggp: Option<LogGp>,
    pub jitter: Nanos,
    pub retransmit: Nanos,
    /// When each rank's send port (LogGP: NIC) is free again.
    send_free: Vec<Nanos>,
    /// When each rank's receive port (LogGP: CPU, for the receive overhead) is free again.
    recv_free: Vec<Nanos>,
    /// LogGP: when each rank's CPU is free of send overheads.
    cpu_free: Vec<Nanos>,
}

impl Net {
    pub fn new(s: &Scenario) -> Net {
        let n = &s.network;
        let p = s.world.size as usize;
        let loggp = match n.model {
            NetModel::Loggp => Some(LogGp {
                l: n.loggp_l.map_or(0, |d| d.0),
                o: n.loggp_o.map_or(0, |d| d.0),
                g: n.loggp_g.map_or(0, |d| d.0),
                gb: n.loggp_gb.map_or(0, |d| d.0),
            }),
            NetModel::AlphaBeta => None,
        };
        Net {
            model: n.model,
            inter: LinkParams {
                latency: n.latency.0,
                bandwidth: n.bandwidth,
            },
            intra: n.intra_host.map(|l| LinkParams {
                latency: l.latency.0,
                bandwidth: l.bandwidth,
            }),
            ranks_per_host: s.world.ranks_per_host.max(1),
            loggp,
            jitter: n.jitter.0,
            retransmit: n.retransmit_timeout.0.max(1),
            send_free: vec![0; p],
            recv_free: vec![0; p],
            cpu_free: vec![0; p],
        }
    }

    fn link(&self, from: u32, to: u32) -> LinkParams {
        match self.intra {
            Some(l) if from / self.ranks_per_host == to / self.ranks_per_host => l,
            _ => self.inter,
        }
    }

    /// Plans a send issued at `t`; `extra` is added wire delay (faults, jitter).
    pub fn send(&mut self, t: Nanos, from: u32, to: u32, bytes: u64, extra: Nanos) -> Timing {
        let (f, _) = (from as usize, to as usize);
        match (self.model, self.loggp) {
            (NetModel::Loggp, Some(lg)) => {
                let start = t.max(self.cpu_free[f]).max(self.send_free[f]);
                let wire = bytes.saturating_sub(1) * lg.gb;
                self.cpu_free[f] = start + lg.o;
                // the next injection waits for the gap and for this message's bytes
                self.send_free[f] = start + lg.o + lg.g.max(wire);
                Timing {
                    depart: start,
                    arrive: start + lg.o + wire + lg.l + extra,
                    recv_cost: lg.o,
                }
            }
            _ => {
                let link = self.link(from, to);
                let ser = link.bandwidth.transfer_ns(bytes);
                let start = t.max(self.send_free[f]);
                self.send_free[f] = start + ser;
                Timing {
                    depart: start,
                    arrive: start + link.latency + ser + extra,
                    recv_cost: ser,
                }
            }
        }
    }

    /// When a message that reached `to` at `arrive` is handed to the process, given what else
    /// the receive side is doing; reserves the receive side until then.
    pub fn receive(&mut self, to: u32, arrive: Nanos, recv_cost: Nanos) -> Nanos {
        let r = to as usize;
        let done = match self.model {
            // the receiver's CPU pays o after the message is there
            NetModel::Loggp => arrive.max(self.recv_free[r].max(self.cpu_free[r])) + recv_cost,
            // the bytes stream in during [arrive - cost, arrive] unless the port is busy
            NetModel::AlphaBeta => arrive.max(self.recv_free[r] + recv_cost),
        };
        self.recv_free[r] = done;
        if self.model == NetModel::Loggp {
            self.cpu_free[r] = self.cpu_free[r].max(done);
        }
        done
    }

    /// Adds a node after the ranks (the store of a store rendezvous), with its own ports; it
    /// sits on its own host.
    pub fn add_node(&mut self) {
        self.send_free.push(0);
        self.recv_free.push(0);
        self.cpu_free.push(0);
    }

    /// Forgets a dead rank's port state.
    pub fn reset_rank(&mut self, rank: u32, now: Nanos) {
        let r = rank as usize;
        self.send_free[r] = now;
        self.recv_free[r] = now;
        self.cpu_free[r] = now;
    }
}
