//! Registry messages and events.

use crate::time::Nanos;
use crate::types::Rank;

/// What registry nodes say to one another.
#[derive(Clone, Debug, PartialEq)]
pub enum RegistryMsg {
    /// Failure detection (an unreliable datagram); the incarnation tells a restart apart.
    Heartbeat { incarnation: u32 },
    /// The sender's whole local membership in scope `scope` (an index into the configured
    /// scopes), at `version` of incarnation `incarnation`. `reply`: send yours back.
    State {
        scope: u32,
        incarnation: u32,
        version: u64,
        groups: Vec<String>,
        reply: bool,
    },
    /// A broadcast to the group's members on the receiving node.
    Deliver {
        scope: u32,
        group: String,
        message: String,
    },
}

impl RegistryMsg {
    pub fn kind(&self) -> &'static str {
        match self {
            RegistryMsg::Heartbeat { .. } => "registry_heartbeat",
            RegistryMsg::State { .. } => "registry_state",
            RegistryMsg::Deliver { .. } => "registry_deliver",
        }
    }

    /// Modeled size on the wire.
    pub fn bytes(&self) -> u64 {
        64 + match self {
            RegistryMsg::Heartbeat { .. } => 0,
            RegistryMsg::State { groups, .. } => groups.iter().map(|g| g.len() as u64 + 4).sum(),
            RegistryMsg::Deliver { group, message, .. } => (group.len() + message.len()) as u64,
        }
    }
}

/// What a registry node reports (the driver turns these into trace events).
#[derive(Clone, Debug, PartialEq)]
pub enum RegistryEvent {
    /// This node's member joined `group`.
    Join { scope: String, group: String },
    /// This node's member left `group`.
    Leave { scope: String, group: String },
    /// This node's view of `group` changed: its members now.
    View {
        scope: String,
        group: String,
        members: Vec<Rank>,
    },
    /// A monitor's notification: who joined and who left `group`.
    Notify {
        scope: String,
        group: String,
        joined: Vec<Rank>,
        left: Vec<Rank>,
    },
    /// `monitor(group)` started: the members at that moment.
    Monitor {
        scope: String,
        group: String,
        members: Vec<Rank>,
    },
    /// `broadcast(group, message)` sent to these members.
    Broadcast {
        scope: String,
        group: String,
        message: String,
        to: Vec<Rank>,
    },
    /// A broadcast reached this node's member; `items` is how many it holds for the group now
    /// (the replicated to-do list).
    Deliver {
        scope: String,
        group: String,
        from: Rank,
        message: String,
        items: u32,
    },
    /// `members(group)` as this node sees it, with what the scenario expected.
    Query {
        scope: String,
        group: String,
        members: Vec<Rank>,
        local: bool,
        expected: Option<Vec<Rank>>,
    },
    /// The failure detector gave up on `node`: its members left every view here.
    NodeDown { node: Rank, silent_ns: Nanos },
    /// `node` is reachable again (or for the first time).
    NodeUp { node: Rank },
}
