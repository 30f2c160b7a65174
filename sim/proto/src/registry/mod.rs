//! A process-group registry in the style of Erlang's `:pg`, sans-IO.
//!
//! Every node (world rank) runs one registry. Groups are named by strings and live in scopes
//! (independent registries; the default scope is `"pg"`, as Erlang's). A node's own processes
//! join and leave groups; `members(group)` lists every node with a member in it, and
//! `local_members(group)` says whether this node has one; `monitor(group)` reports joins and
//! leaves; `broadcast(group, message)` sends to every member.
//!
//! Like `:pg`, it is eventually consistent and has no leader: each node owns its local
//! memberships and is the only one to change them.
//! - On a local join or leave the node sends its whole local state of that scope, versioned, to
//!   every peer it is connected to. Whole states and versions make the updates idempotent and
//!   order-insensitive: a retransmitted or reordered update never undoes a later one.
//! - Peers are watched by heartbeats (datagrams). A peer silent for `heartbeat_misses`
//!   intervals is disconnected: its members leave every view here.
//! - On (re)connection — hearing from a peer that was disconnected — the two exchange their
//!   whole local states, so views converge once a partition heals.
//! - A restarted node comes back with a new incarnation and no memberships: its peers drop what
//!   its previous incarnation had.
//!
//! Members are node ranks: a node joins a group at most once (joining again is a no-op).
//! Broadcasts are delivered only to nodes whose member is still in the group when the message
//! arrives; each member keeps what it received, in order (the replicated to-do list of the
//! seed example).

pub mod msg;

pub use msg::{RegistryEvent, RegistryMsg};

use super::elastic::Detector;
use super::event::{Outbox, ProtoEvent};
use super::msg::Msg;
use super::mutation::{Mutation, Mutations};
use super::types::{Rank, TimerKey};
use crate::time::Nanos;
use crate::vocab::RegistryAction;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The scope of steps that name none.
pub const DEFAULT_SCOPE: &str = "pg";

/// One `[[workload.registry]]` step, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub index: u32,
    pub at: Nanos,
    pub rank: Rank,
    pub action: RegistryAction,
    /// Index into [`RegistryConfig::scopes`].
    pub scope: u32,
    pub group: String,
    pub message: Option<String>,
    pub expect: Option<Vec<Rank>>,
}

/// The registry workload of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct RegistryConfig {
    pub nodes: u32,
    /// Every scope the steps name, sorted.
    pub scopes: Vec<String>,
    pub steps: Vec<Step>,
    pub heartbeat_interval: Nanos,
    pub heartbeat_misses: u32,
}

/// What a node holds of a peer's local state in one scope.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Remote {
    incarnation: u32,
    version: u64,
    groups: BTreeSet<String>,
}

#[derive(Clone, Debug, Default)]
struct ScopeState {
    local: BTreeSet<String>,
    version: u64,
    /// By node rank.
    remote: Vec<Option<Remote>>,
    monitors: BTreeSet<String>,
    /// The last view reported of each group.
    views: BTreeMap<String, Vec<Rank>>,
    /// What this node's members received, by group, in order: (sender, message).
    inbox: BTreeMap<String, Vec<(Rank, String)>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Peer {
    up: bool,
    ever_up: bool,
    incarnation: u32,
}

/// One node's registry.
pub struct Registry {
    cfg: Arc<RegistryConfig>,
    me: Rank,
    incarnation: u32,
    peers: Vec<Peer>,
    detector: Detector,
    scopes: Vec<ScopeState>,
    /// Steps of this node not run yet.
    pending: u32,
    /// `Mutation::NoRegistryResync`: no state exchange when a known peer reconnects.
    no_resync: bool,
}

impl Registry {
    /// The registry of node `me`. Of `mutations`, it plants `NoRegistryResync`.
    pub fn new(
        cfg: Arc<RegistryConfig>,
        me: Rank,
        incarnation: u32,
        mutations: Mutations,
    ) -> Registry {
        let n = cfg.nodes as usize;
        let scopes = cfg
            .scopes
            .iter()
            .map(|_| ScopeState {
                remote: vec![None; n],
                ..ScopeState::default()
            })
            .collect();
        let detector = Detector::new(cfg.heartbeat_interval, cfg.heartbeat_misses);
        Registry {
            me,
            incarnation,
            peers: vec![Peer::default(); n],
            detector,
            scopes,
            pending: 0,
            cfg,
            no_resync: mutations.contains(Mutation::NoRegistryResync),
        }
    }

    /// Every step of this node has run.
    pub fn finished(&self) -> bool {
        self.pending == 0
    }

    /// `members(group)` in `scope` as this node sees it, in rank order.
    pub fn members(&self, scope: u32, group: &str) -> Vec<Rank> {
        let s = &self.scopes[scope as usize];
        (0..self.cfg.nodes)
            .map(Rank)
            .filter(|&r| {
                if r == self.me {
                    s.local.contains(group)
                } else {
                    self.peers[r.idx()].up
                        && s.remote[r.idx()]
                            .as_ref()
                            .is_some_and(|x| x.groups.contains(group))
                }
            })
            .collect()
    }

    /// Whether this node has a member in `group`.
    pub fn local_member(&self, scope: u32, group: &str) -> bool {
        self.scopes[scope as usize].local.contains(group)
    }

    /// What this node's member received in `group`, in order.
    pub fn received(&self, scope: u32, group: &str) -> &[(Rank, String)] {
        self.scopes[scope as usize]
            .inbox
            .get(group)
            .map_or(&[], |v| v.as_slice())
    }

    /// Starts the node: schedules its steps still to come and connects to every peer.
    pub fn start(&mut self, now: Nanos, out: &mut Outbox) {
        for st in &self.cfg.steps {
            if st.rank == self.me && st.at >= now {
                self.pending += 1;
                out.set_timer(TimerKey::Registry { step: st.index }, st.at);
            }
        }
        let others: Vec<Rank> = self.others().collect();
        self.detector.watch(now, others.iter().copied());
        out.set_timer(
            TimerKey::RegistryHeartbeat,
            crate::time::later(now, self.cfg.heartbeat_interval),
        );
        for r in others {
            self.send_states(r, true, out);
        }
    }

    pub fn on_timer(&mut self, now: Nanos, key: TimerKey, out: &mut Outbox) {
        match key {
            TimerKey::RegistryHeartbeat => {
                out.set_timer(
                    TimerKey::RegistryHeartbeat,
                    crate::time::later(now, self.cfg.heartbeat_interval),
                );
                let hb = RegistryMsg::Heartbeat {
                    incarnation: self.incarnation,
                };
                for r in self.others().collect::<Vec<_>>() {
                    let bytes = hb.bytes();
                    out.send_datagram(r, Msg::Registry(Box::new(hb.clone())), bytes);
                }
                for (node, silent_ns) in self.detector.check(now) {
                    if self.peers[node.idx()].up {
                        self.disconnect(node, silent_ns, out);
                    }
                }
            }
            TimerKey::Registry { step } => {
                let Some(st) = self.cfg.steps.get(step as usize).cloned() else {
                    return;
                };
                if st.rank == self.me && self.pending > 0 {
                    self.pending -= 1;
                    self.run_step(&st, out);
                }
            }
            _ => {}
        }
    }

    pub fn on_message(&mut self, now: Nanos, from: Rank, msg: RegistryMsg, out: &mut Outbox) {
        if from.idx() >= self.peers.len() || from == self.me {
            return;
        }
        let incarnation = match &msg {
            RegistryMsg::Heartbeat { incarnation } | RegistryMsg::State { incarnation, .. } => {
                Some(*incarnation)
            }
            RegistryMsg::Deliver { .. } => None,
        };
        if let Some(inc) = incarnation {
            let known = self.peers[from.idx()].incarnation;
            if inc < known {
                return; // from a process that has since died
            }
            if inc > known {
                // a restarted node: what its previous process had is gone
                self.peers[from.idx()].incarnation = inc;
                for s in 0..self.scopes.len() {
                    self.set_remote(s, from, None, out);
                }
            }
        }
        self.detector.heard(now, from);
        if !self.peers[from.idx()].up {
            self.connect(from, &msg, out);
        }
        match msg {
            RegistryMsg::Heartbeat { .. } => {}
            RegistryMsg::State {
                scope,
                incarnation,
                version,
                groups,
                reply,
            } => {
                let s = scope as usize;
                if s >= self.scopes.len() {
                    return;
                }
                let newer = match &self.scopes[s].remote[from.idx()] {
                    Some(x) => (incarnation, version) > (x.incarnation, x.version),
                    None => true,
                };
                if newer {
                    let remote = Remote {
                        incarnation,
                        version,
                        groups: groups.into_iter().collect(),
                    };
                    self.set_remote(s, from, Some(remote), out);
                }
                if reply {
                    self.send_state(from, s, false, out);
                }
            }
            RegistryMsg::Deliver {
                scope,
                group,
                message,
            } => self.deliver(scope as usize, group, from, message, out),
        }
    }

    /// `from` is heard from while disconnected: connect, and exchange whole states.
    fn connect(&mut self, from: Rank, msg: &RegistryMsg, out: &mut Outbox) {
        let peer = &mut self.peers[from.idx()];
        let first = !peer.ever_up;
        peer.up = true;
        peer.ever_up = true;
        out.event(ProtoEvent::Registry(RegistryEvent::NodeUp { node: from }));
        let asked = matches!(msg, RegistryMsg::State { reply: true, .. });
        if (first || !self.no_resync) && !asked {
            self.send_states(from, true, out);
        }
        for s in 0..self.scopes.len() {
            let groups = self.remote_groups(s, from);
            self.refresh(s, groups, out);
        }
    }

    fn run_step(&mut self, st: &Step, out: &mut Outbox) {
        let s = st.scope as usize;
        let scope = self.cfg.scopes[s].clone();
        let group = st.group.clone();
        match st.action {
            RegistryAction::Join | RegistryAction::Leave => {
                let join = st.action == RegistryAction::Join;
                let changed = if join {
                    self.scopes[s].local.insert(group.clone())
                } else {
                    self.scopes[s].local.remove(&group)
                };
                let ev = if join {
                    RegistryEvent::Join {
                        scope,
                        group: group.clone(),
                    }
                } else {
                    RegistryEvent::Leave {
                        scope,
                        group: group.clone(),
                    }
                };
                out.event(ProtoEvent::Registry(ev));
                if !changed {
                    return;
                }
                self.scopes[s].version += 1;
                for r in self.others().collect::<Vec<_>>() {
                    if self.peers[r.idx()].up {
                        self.send_state(r, s, false, out);
                    }
                }
                self.refresh(s, vec![group], out);
            }
            RegistryAction::Broadcast => {
                let message = st.message.clone().unwrap_or_default();
                let to = self.members(st.scope, &group);
                out.event(ProtoEvent::Registry(RegistryEvent::Broadcast {
                    scope,
                    group: group.clone(),
                    message: message.clone(),
                    to: to.clone(),
                }));
                for r in to {
                    if r == self.me {
                        self.deliver(s, group.clone(), self.me, message.clone(), out);
                    } else {
                        let m = RegistryMsg::Deliver {
                            scope: st.scope,
                            group: group.clone(),
                            message: message.clone(),
                        };
                        let bytes = m.bytes();
                        out.send(r, Msg::Registry(Box::new(m)), bytes);
                    }
                }
            }
            RegistryAction::Query => {
                let members = self.members(st.scope, &group);
                let local = self.local_member(st.scope, &group);
                out.event(ProtoEvent::Registry(RegistryEvent::Query {
                    scope,
                    group,
                    members,
                    local,
                    expected: st.expect.clone(),
                }));
            }
            RegistryAction::Monitor => {
                self.scopes[s].monitors.insert(group.clone());
                let members = self.members(st.scope, &group);
                out.event(ProtoEvent::Registry(RegistryEvent::Monitor {
                    scope,
                    group,
                    members,
                }));
            }
        }
    }

    fn deliver(&mut self, s: usize, group: String, from: Rank, message: String, out: &mut Outbox) {
        if s >= self.scopes.len() || !self.scopes[s].local.contains(&group) {
            return; // no member here any more
        }
        let inbox = self.scopes[s].inbox.entry(group.clone()).or_default();
        inbox.push((from, message.clone()));
        let items = inbox.len() as u32;
        out.event(ProtoEvent::Registry(RegistryEvent::Deliver {
            scope: self.cfg.scopes[s].clone(),
            group,
            from,
            message,
            items,
        }));
    }

    fn disconnect(&mut self, node: Rank, silent_ns: Nanos, out: &mut Outbox) {
        self.peers[node.idx()].up = false;
        out.event(ProtoEvent::Registry(RegistryEvent::NodeDown {
            node,
            silent_ns,
        }));
        for s in 0..self.scopes.len() {
            self.set_remote(s, node, None, out);
        }
    }

    fn remote_groups(&self, s: usize, node: Rank) -> Vec<String> {
        self.scopes[s].remote[node.idx()]
            .as_ref()
            .map(|x| x.groups.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Replaces what this node holds of `from`'s state in scope `s`, reporting view changes.
    fn set_remote(&mut self, s: usize, from: Rank, remote: Option<Remote>, out: &mut Outbox) {
        let mut touched = self.remote_groups(s, from);
        if let Some(r) = &remote {
            touched.extend(r.groups.iter().cloned());
        }
        self.scopes[s].remote[from.idx()] = remote;
        touched.sort();
        touched.dedup();
        self.refresh(s, touched, out);
    }

    /// Reports every group of `groups` whose members differ from the last view reported,
    /// with a notification where it is monitored.
    fn refresh(&mut self, s: usize, groups: Vec<String>, out: &mut Outbox) {
        for g in groups {
            let now = self.members(s as u32, &g);
            let then = self.scopes[s].views.get(&g).cloned().unwrap_or_default();
            if then == now {
                continue;
            }
            let scope = self.cfg.scopes[s].clone();
            out.event(ProtoEvent::Registry(RegistryEvent::View {
                scope: scope.clone(),
                group: g.clone(),
                members: now.clone(),
            }));
            if self.scopes[s].monitors.contains(&g) {
                let joined = now.iter().filter(|r| !then.contains(r)).copied().collect();
                let left = then.iter().filter(|r| !now.contains(r)).copied().collect();
                out.event(ProtoEvent::Registry(RegistryEvent::Notify {
                    scope,
                    group: g.clone(),
                    joined,
                    left,
                }));
            }
            self.scopes[s].views.insert(g, now);
        }
    }

    fn others(&self) -> impl Iterator<Item = Rank> + '_ {
        (0..self.cfg.nodes).map(Rank).filter(move |&r| r != self.me)
    }

    fn send_states(&self, to: Rank, reply: bool, out: &mut Outbox) {
        for s in 0..self.scopes.len() {
            self.send_state(to, s, reply, out);
        }
    }

    fn send_state(&self, to: Rank, s: usize, reply: bool, out: &mut Outbox) {
        let st = &self.scopes[s];
        let m = RegistryMsg::State {
            scope: s as u32,
            incarnation: self.incarnation,
            version: st.version,
            groups: st.local.iter().cloned().collect(),
            reply,
        };
        let bytes = m.bytes();
        out.send(to, Msg::Registry(Box::new(m)), bytes);
    }
}

/// A registry node on its own, as the standalone executor drives it.
impl crate::standalone::Node for Registry {
    fn handle(&mut self, now: Nanos, input: crate::process::Input, out: &mut Outbox) {
        use crate::process::Input;
        match input {
            Input::Start => self.start(now, out),
            Input::Message {
                from,
                msg: Msg::Registry(m),
            } => self.on_message(now, from, *m, out),
            Input::Timer(key) => self.on_timer(now, key, out),
            // nothing else is meant for a registry node
            _ => {}
        }
    }

    /// A registry node waits for no peer in particular: its views converge by gossip, and a
    /// silent node is suspected and left out rather than waited for.
    fn wait_state(&self) -> Option<crate::node::Waiting> {
        None
    }

    fn finished(&self) -> bool {
        Registry::finished(self)
    }
}
