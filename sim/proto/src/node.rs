//! Nodes: the sans-IO state machines a driver runs, ringside's own and a program's own.
//!
//! A [`Node`] is handed `(now, input)` and pushes what it wants done into an [`Outbox`]
//! (messages, timers, events), and it answers two questions about itself at any moment:
//! [`Node::wait_state`], whom it waits for right now and in what, so that a diagnosis can
//! follow waits from node to node; and [`Node::finished`], whether its work is done.
//!
//! ringside's rank process ([`RankProcess`]: the workload on its process groups, elastic
//! membership, the registry) is a node, and so is a [`Registry`](crate::registry::Registry)
//! node; the [`standalone`](crate::standalone) executor runs any of them. A program brings a
//! protocol of its own (a membership, a rendezvous, a barrier) as a node too, registered
//! under a name with a [`NodeFactory`]: a scenario whose `[workload]` says `node = "<name>"`
//! runs one on every rank, on the engine, under the scenario's faults, with the node's waits
//! diagnosed and its runs checked by the properties. Such a node speaks in
//! [`Msg::Node`](crate::msg::Msg::Node) messages (bytes, as a wire carries them) and sets
//! [`TimerKey::Node`](crate::types::TimerKey::Node) timers; the rank process that hosts it
//! hands it its inputs and reports its waits and its end as events.
//!
//! Registration is process-wide and permanent, as for algorithms
//! ([`custom`](crate::collective::custom)): a program registers its nodes before it parses a
//! scenario or reads a trace that names them.

use crate::event::Outbox;
use crate::process::{Input, RankProcess};
use crate::time::Nanos;
use crate::types::Rank;
use std::fmt;
use std::sync::{PoisonError, RwLock};

/// A sans-IO state machine a driver can run (see the module doc).
pub trait Node {
    /// Handles `input` at virtual time `now`, pushing what it wants done into `out`.
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox);
    /// Whom the node waits for right now, and in what; `None` when it waits for nobody
    /// (working, finished, or idle by choice).
    fn wait_state(&self) -> Option<Waiting>;
    /// Whether the node's work is done: a run whose every node is finished is over.
    fn finished(&self) -> bool;
}

/// What a node waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// What it waits in, in a few words: `barrier round 3`, `rendezvous for generation 2`.
    pub on: String,
    /// The nodes whose messages it waits for (world ranks), in ascending order.
    pub waiting_for: Vec<Rank>,
}

impl Node for RankProcess {
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        RankProcess::handle(self, now, input, out);
    }

    /// Its collective's step, its send or recv, its elastic group's rendezvous, or the wait
    /// of the node it hosts.
    fn wait_state(&self) -> Option<Waiting> {
        self.waiting()
    }

    fn finished(&self) -> bool {
        matches!(
            self.status(),
            crate::process::RankStatus::Done | crate::process::RankStatus::Refused
        )
    }
}

/// What a program's node is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCtx {
    /// The node's rank, and how many ranks the world has.
    pub me: Rank,
    pub world: u32,
    /// Restarts of this rank so far: 0 for the first process, more for one restarted after a
    /// preemption (which starts afresh, knowing nothing of its predecessor).
    pub incarnation: u32,
    /// The run's seed, for a node that draws random numbers (from its own seeded generator).
    pub seed: u64,
}

type Build = dyn Fn(&NodeCtx) -> Box<dyn Node> + Send + Sync;

/// A node kind of a program's own: its name, and how one rank's node is built.
pub struct NodeFactory {
    name: &'static str,
    build: Box<Build>,
}

impl NodeFactory {
    pub fn new(
        name: &'static str,
        build: impl Fn(&NodeCtx) -> Box<dyn Node> + Send + Sync + 'static,
    ) -> NodeFactory {
        NodeFactory {
            name,
            build: Box::new(build),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// One rank's node.
    pub fn build(&self, ctx: &NodeCtx) -> Box<dyn Node> {
        (self.build)(ctx)
    }
}

impl fmt::Debug for NodeFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeFactory")
            .field("name", &self.name)
            .finish()
    }
}

/// How many node kinds one program may register.
pub const MAX_NODE_KINDS: usize = 256;

/// A node kind registered by [`register`] (its place in this program's table). Written as
/// its name.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeKind(u8);

impl NodeKind {
    /// What it was registered with.
    pub fn factory(self) -> &'static NodeFactory {
        table()[usize::from(self.0)]
    }

    pub fn name(self) -> &'static str {
        self.factory().name
    }
}

impl fmt::Debug for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.name())
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for NodeKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for NodeKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NodeKind, D::Error> {
        let name = String::deserialize(d)?;
        find(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown node `{name}`: this program has registered no node of that name \
                 (a program registers its nodes before it reads a scenario or a trace)"
            ))
        })
    }
}

/// Why [`register`] refused a factory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegisterNodeError {
    #[error(
        "`{0}` is not a node name: use lowercase letters, digits and `_`, starting with a letter"
    )]
    BadName(&'static str),
    #[error("`{0}` is already a node")]
    Taken(NodeKind),
    #[error("no more than {MAX_NODE_KINDS} nodes can be registered")]
    Full,
}

static TABLE: RwLock<Vec<&'static NodeFactory>> = RwLock::new(Vec::new());

fn table() -> std::sync::RwLockReadGuard<'static, Vec<&'static NodeFactory>> {
    TABLE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Registers `factory` under its name, for the rest of the program (see the module doc).
pub fn register(factory: NodeFactory) -> Result<NodeKind, RegisterNodeError> {
    let name = factory.name;
    if !crate::collective::custom::registrable(name) {
        return Err(RegisterNodeError::BadName(name));
    }
    let mut table = TABLE.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = table.iter().position(|f| f.name == name) {
        return Err(RegisterNodeError::Taken(NodeKind(i as u8)));
    }
    if table.len() >= MAX_NODE_KINDS {
        return Err(RegisterNodeError::Full);
    }
    table.push(Box::leak(Box::new(factory)));
    Ok(NodeKind((table.len() - 1) as u8))
}

/// The node registered under `name`, if any.
pub fn find(name: &str) -> Option<NodeKind> {
    let i = table().iter().position(|f| f.name == name)?;
    Some(NodeKind(i as u8))
}

/// A rank process's node of the program's own: the node, and what was last reported of it.
pub(crate) struct Hosted {
    pub node: Box<dyn Node>,
    pub reported: Option<Waiting>,
    pub done: bool,
}
