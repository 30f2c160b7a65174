//! A worker's peers: accepting their connections and checking every frame, and one writer
//! task per peer that owns the connection to it.

use super::wire::{self, Envelope, Frame};
use super::worker::WorkerConfig;
use crate::proto::{Msg, ProcConfig, Rank};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// A message from a peer, checked.
pub(super) struct Inbound {
    pub(super) from: u32,
    pub(super) id: u64,
    pub(super) msg: Msg,
}

/// Addresses of every node, shared with the writer tasks.
pub(super) type Table = Arc<Mutex<Vec<Option<SocketAddr>>>>;

pub(super) fn log(cfg: &WorkerConfig, msg: impl std::fmt::Display) {
    eprintln!("worker {}.{}: {msg}", cfg.rank, cfg.incarnation);
}

/// Accepts peers; each connection gets its own reader task.
pub(super) async fn accept(
    listener: TcpListener,
    tx: mpsc::UnboundedSender<Inbound>,
    cfg: WorkerConfig,
    proc_cfg: Arc<ProcConfig>,
    nodes: u32,
) {
    let cfg = Arc::new(cfg);
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let (tx, cfg, proc_cfg) = (tx.clone(), cfg.clone(), proc_cfg.clone());
        tokio::spawn(async move {
            if let Err(e) = read_peer(stream, &tx, &cfg, &proc_cfg, nodes).await {
                log(&cfg, format!("closing the connection from {peer}: {e}"));
            }
        });
    }
}

async fn read_frame(stream: &mut TcpStream) -> Result<Option<Frame>, wire::WireError> {
    let mut len = [0u8; 4];
    match stream.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(wire::WireError::Refused(e.to_string())),
    }
    let n = wire::check_len(u32::from_be_bytes(len))?;
    let mut body = vec![0u8; n];
    stream
        .read_exact(&mut body)
        .await
        .map_err(|_| wire::WireError::Truncated)?;
    wire::decode(&body).map(Some)
}

/// Reads one peer's frames: a hello, then messages, each checked (see the wire module).
async fn read_peer(
    mut stream: TcpStream,
    tx: &mpsc::UnboundedSender<Inbound>,
    cfg: &WorkerConfig,
    proc_cfg: &ProcConfig,
    nodes: u32,
) -> Result<(), wire::WireError> {
    let refused = |m: String| wire::WireError::Refused(m);
    let hello = tokio::time::timeout(Duration::from_secs(10), read_frame(&mut stream))
        .await
        .map_err(|_| refused("no hello within 10s".into()))??;
    let (rank, incarnation) = match hello {
        None => return Ok(()),
        Some(Frame::Hello {
            job,
            rank,
            incarnation,
        }) => {
            if job != cfg.job {
                return Err(refused(format!("hello from job {job:#x}, not this job")));
            }
            if rank >= nodes {
                return Err(refused(format!(
                    "hello from {rank}, not a node of the world"
                )));
            }
            (rank, incarnation)
        }
        Some(Frame::Message(_)) => return Err(refused("a message before the hello".into())),
    };
    while let Some(frame) = read_frame(&mut stream).await? {
        let Frame::Message(m) = frame else {
            return Err(refused("a second hello".into()));
        };
        check_envelope(&m, cfg.job, rank, incarnation, proc_cfg)?;
        let inbound = Inbound {
            from: m.from,
            id: m.id,
            msg: m.msg,
        };
        if tx.send(inbound).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// The checks every message passes: same job, the sender that said hello, and a collective
/// message's group and generation consistent with the frame and the sender's membership.
fn check_envelope(
    m: &Envelope,
    job: u64,
    rank: u32,
    incarnation: u32,
    cfg: &ProcConfig,
) -> Result<(), wire::WireError> {
    let refused = |m: String| Err(wire::WireError::Refused(m));
    if m.job != job {
        return refused(format!("message of job {:#x}", m.job));
    }
    if m.from != rank || m.incarnation != incarnation {
        return refused(format!(
            "message from {}.{} on the connection of {rank}.{incarnation}",
            m.from, m.incarnation
        ));
    }
    if m.generation != wire::generation_of(&m.msg) {
        return refused(format!(
            "frame generation {} differs from the message's",
            m.generation
        ));
    }
    let group = match &m.msg {
        Msg::Coll(c) => Some((c.fp.group, "collective")),
        Msg::P2p(p) => Some((p.group, "point-to-point")),
        Msg::Elastic(_) | Msg::Registry(_) => None,
    };
    if let Some((group, what)) = group {
        let member = cfg
            .group_members(group)
            .is_some_and(|g| g.index(Rank(rank)).is_some());
        if !member {
            return refused(format!(
                "{what} message of group {} from {rank}, not one of its members",
                group.0
            ));
        }
    }
    Ok(())
}

/// Sends frames to one peer over the connection it owns, (re)connecting when needed.
pub(super) async fn write_peer(
    to: u32,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    table: Table,
    hello: Vec<u8>,
) {
    let mut conn: Option<(SocketAddr, TcpStream)> = None;
    while let Some(frame) = rx.recv().await {
        let addr = table.lock().ok().and_then(|t| t[to as usize]);
        let Some(addr) = addr else {
            conn = None;
            continue; // the peer is not up: the message is lost, as to a dead process
        };
        if conn.as_ref().is_none_or(|(a, _)| *a != addr) {
            conn = None;
            let connect = tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(addr));
            if let Ok(Ok(mut s)) = connect.await {
                let _ = s.set_nodelay(true);
                if s.write_all(&hello).await.is_ok() {
                    conn = Some((addr, s));
                }
            }
        }
        if let Some((_, s)) = conn.as_mut() {
            if s.write_all(&frame).await.is_err() {
                conn = None;
            }
        }
    }
}
