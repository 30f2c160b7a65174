//! Connections that have not yet proven the job's key: bounded in number and in time.
//!
//! Anyone who can reach a listening port can open connections to it and say nothing. Each
//! holds a file descriptor, and a process has only so many (1,024 by default): a thousand idle
//! connections would leave a worker unable to accept its peers, or `launch` unable to open
//! anything. So a listener admits at most [`Gate::limit`] connections in their handshake at
//! once, and at most as many from one address as a job of its size may open; past either, the
//! oldest connection still in its handshake is closed to make room. A peer of the job proves
//! the key within milliseconds of connecting, so the oldest unproven connection is an idle
//! one. A handshake also has a deadline, and a listener that cannot accept (out of file
//! descriptors) waits before it tries again instead of spinning.

use std::collections::VecDeque;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// How long a connection may take to prove the job's key (and, on a data connection, to say
/// hello).
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);

/// How long a listener waits after a failed accept (out of file descriptors, most likely)
/// before it tries again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The connections in their handshake on one listener.
#[derive(Clone)]
pub(crate) struct Gate {
    inner: Arc<Mutex<Pending>>,
    /// At most this many at once, and at most `per_peer` of them from one address.
    limit: usize,
    per_peer: usize,
    /// Who listens, for its log: `launch`, `worker 2.0`.
    who: Arc<str>,
}

struct Pending {
    next: u64,
    /// Oldest first: (ticket, address, what closes it).
    open: VecDeque<(u64, IpAddr, oneshot::Sender<()>)>,
}

/// Why a handshake did not finish.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Its deadline passed.
    Deadline,
    /// It was the oldest of too many connections in their handshake.
    Evicted,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cut::Deadline => write!(
                f,
                "no proof of the job's key within {}s",
                HANDSHAKE_DEADLINE.as_secs()
            ),
            Cut::Evicted => f.write_str(
                "closed unproven to make room: too many connections were in their handshake",
            ),
        }
    }
}

impl Gate {
    /// A gate for a listener of a job of `nodes` nodes: each may open a connection or two to
    /// it at once, so a job of hundreds of nodes is never cut short.
    pub(crate) fn new(nodes: u32, who: &str) -> Gate {
        let per_peer = (2 * nodes as usize).max(32);
        Gate {
            inner: Arc::new(Mutex::new(Pending {
                next: 0,
                open: VecDeque::new(),
            })),
            limit: 2 * per_peer,
            per_peer,
            who: who.into(),
        }
    }

    /// Accepts the next connection, waiting (not spinning) while accepting fails, and saying
    /// so once per run of failures.
    pub(crate) async fn accept(&self, listener: &TcpListener) -> (TcpStream, SocketAddr) {
        let mut failing = false;
        loop {
            match listener.accept().await {
                Ok(c) => return c,
                Err(e) => {
                    if !failing {
                        eprintln!(
                            "{}: cannot accept a connection ({e}); trying again every {}ms",
                            self.who,
                            ACCEPT_BACKOFF.as_millis()
                        );
                    }
                    failing = true;
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }

    /// Admits a connection from `peer` to its handshake, closing the oldest unproven one from
    /// the same address, or from any, when there are too many.
    pub(crate) fn admit(&self, peer: SocketAddr) -> Ticket {
        let (tx, rx) = oneshot::channel();
        let mut p = self.lock();
        let ip = peer.ip();
        if p.open.iter().filter(|(_, a, _)| *a == ip).count() >= self.per_peer {
            if let Some(i) = p.open.iter().position(|(_, a, _)| *a == ip) {
                p.open.remove(i);
            }
        }
        if p.open.len() >= self.limit {
            p.open.pop_front();
        }
        let id = p.next;
        p.next += 1;
        p.open.push_back((id, ip, tx));
        Ticket {
            gate: self.clone(),
            id,
            cut: rx,
        }
    }

    /// The table (no code panics while holding it; a poisoned one is still consistent).
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn leave(&self, id: u64) {
        let mut p = self.lock();
        if let Some(i) = p.open.iter().position(|(t, _, _)| *t == id) {
            p.open.remove(i);
        }
    }
}

/// A connection's place at the gate, given up when its handshake ends (or it is dropped).
pub(crate) struct Ticket {
    gate: Gate,
    id: u64,
    cut: oneshot::Receiver<()>,
}

impl Ticket {
    /// Runs the handshake `f` until it ends, its deadline passes or the gate closes it to make
    /// room, and gives up the place.
    pub(crate) async fn handshake<T>(mut self, f: impl Future<Output = T>) -> Result<T, Cut> {
        let out = tokio::select! {
            r = tokio::time::timeout(HANDSHAKE_DEADLINE, f) => r.map_err(|_| Cut::Deadline),
            // the sender is dropped (or sent on) only when the gate evicts this connection
            _ = &mut self.cut => Err(Cut::Evicted),
        };
        drop(self);
        out
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.gate.leave(self.id);
    }
}

/// Raises this process's soft limit on open files to its hard limit (at most 2^20): a worker
/// holds a connection per peer, and the gate's bounds are sized for that, not for the 1,024
/// a shell gives by default.
pub(crate) fn raise_open_files() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let want = hard.min(1 << 20);
        if soft < want {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, want, hard);
        }
    }
}
