//! A worker's peers: accepting their connections and checking every frame, and one writer
//! task per peer that owns the connection to it.

use super::ahead::{Ahead, MAX_HELD_BYTES};
use super::auth::{self, Channel, Claim, JobKey};
use super::config::WorkerConfig;
use super::gate::{Gate, Ticket};
use super::wire::{self, Envelope, Frame};
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
    /// Bytes counted against the sender's cap (0: the message was not ahead when read).
    pub(super) held: usize,
}

/// Addresses of every node, shared with the writer tasks.
pub(super) type Table = Arc<Mutex<Vec<Option<SocketAddr>>>>;

pub(super) fn log(cfg: &WorkerConfig, msg: impl std::fmt::Display) {
    eprintln!("worker {}.{}: {msg}", cfg.rank, cfg.incarnation);
}

/// Accepts peers; each connection gets its own reader task, and waits its turn at the gate
/// until it has proven the job's key and said hello.
pub(super) async fn accept(
    listener: TcpListener,
    tx: mpsc::UnboundedSender<Inbound>,
    cfg: WorkerConfig,
    proc_cfg: Arc<ProcConfig>,
    ahead: Ahead,
    nodes: u32,
) {
    let cfg = Arc::new(cfg);
    let gate = Gate::new(nodes, &format!("worker {}.{}", cfg.rank, cfg.incarnation));
    loop {
        let (stream, peer) = gate.accept(&listener).await;
        let ticket = gate.admit(peer);
        let (tx, cfg, proc_cfg) = (tx.clone(), cfg.clone(), proc_cfg.clone());
        let ahead = ahead.clone();
        tokio::spawn(async move {
            let reader = Reader {
                cfg: &cfg,
                proc_cfg: &proc_cfg,
                ahead: &ahead,
                nodes,
            };
            if let Err(e) = read_peer(stream, &tx, reader, ticket).await {
                log(&cfg, format!("closing the connection from {peer}: {e}"));
            }
        });
    }
}

/// A frame and its size on the wire.
async fn read_frame(stream: &mut TcpStream) -> Result<Option<(Frame, usize)>, wire::WireError> {
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
    wire::decode(&body).map(|f| Some((f, 4 + n)))
}

/// What a reader task checks frames against.
struct Reader<'a> {
    cfg: &'a WorkerConfig,
    proc_cfg: &'a ProcConfig,
    ahead: &'a Ahead,
    nodes: u32,
}

/// Reads one peer's frames: a hello, then messages, each checked (see the wire module).
async fn read_peer(
    mut stream: TcpStream,
    tx: &mpsc::UnboundedSender<Inbound>,
    r: Reader<'_>,
    ticket: Ticket,
) -> Result<(), wire::WireError> {
    let (cfg, nodes) = (r.cfg, r.nodes);
    let refused = |m: String| wire::WireError::Refused(m);
    let opening = async {
        let claim = auth::verify(&mut stream, &cfg.key, Channel::Data, cfg.job)
            .await
            .map_err(|e| refused(e.to_string()))?;
        Ok::<_, wire::WireError>((claim, read_frame(&mut stream).await?))
    };
    let (claim, hello) = ticket
        .handshake(opening)
        .await
        .map_err(|cut| refused(cut.to_string()))??;
    if claim.rank >= nodes {
        return Err(refused(format!(
            "a proven claim for {}, not a node of the world",
            claim.rank
        )));
    }
    // the connection belongs to the node it proved it speaks for
    let (rank, incarnation) = match hello {
        None => return Ok(()),
        Some((
            Frame::Hello {
                job,
                rank,
                incarnation,
            },
            _,
        )) => {
            if job != cfg.job {
                return Err(refused(format!("hello from job {job:#x}, not this job")));
            }
            if (rank, incarnation) != (claim.rank, claim.incarnation) {
                return Err(refused(format!(
                    "hello from {rank}.{incarnation} on a connection proven for {}.{}",
                    claim.rank, claim.incarnation
                )));
            }
            (rank, incarnation)
        }
        Some((Frame::Message(_), _)) => return Err(refused("a message before the hello".into())),
    };
    while let Some((frame, size)) = read_frame(&mut stream).await? {
        let Frame::Message(m) = frame else {
            return Err(refused("a second hello".into()));
        };
        check_envelope(&m, cfg.job, rank, incarnation, r.proc_cfg)?;
        let held = if r.ahead.is_ahead(&m.msg) {
            if let Err(already) = r.ahead.hold(rank, size) {
                return Err(refused(format!(
                    "{rank} sent a chunk of {size} bytes for a call far ahead of this rank \
                     while {already} bytes of such chunks wait (at most {MAX_HELD_BYTES}): \
                     dropped"
                )));
            }
            size
        } else {
            0
        };
        let inbound = Inbound {
            from: m.from,
            id: m.id,
            msg: m.msg,
            held,
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
        Msg::Elastic(_) | Msg::Registry(_) | Msg::Node(_) => None,
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

/// How a writer opens a connection: the proof of the job's key for this node, then its hello.
pub(super) struct Opener {
    pub(super) key: JobKey,
    pub(super) claim: Claim,
    pub(super) hello: Vec<u8>,
}

/// Opens a connection to `addr`: connects, proves the job's key and says hello. A listener
/// that cannot prove the key back is not a peer of this job: logged, and nothing is sent.
async fn open(addr: SocketAddr, opener: &Opener) -> Option<TcpStream> {
    let connect = tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(addr));
    let mut s = connect.await.ok()?.ok()?;
    let _ = s.set_nodelay(true);
    let proof = auth::prove(&mut s, &opener.key, opener.claim);
    match tokio::time::timeout(Duration::from_secs(2), proof).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!(
                "worker {}.{}: not sending to {addr}: {e}",
                opener.claim.rank, opener.claim.incarnation
            );
            return None;
        }
        Err(_) => return None,
    }
    s.write_all(&opener.hello).await.ok()?;
    Some(s)
}

/// Sends frames to one peer over the connection it owns, (re)connecting when needed.
pub(super) async fn write_peer(
    to: u32,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    table: Table,
    opener: Opener,
) {
    let mut conn: Option<(SocketAddr, TcpStream)> = None;
    while let Some(frame) = rx.recv().await {
        let addr = table.lock().ok().and_then(|t| t[to as usize]);
        let Some(addr) = addr else {
            conn = None;
            continue; // the peer is not up: the message is lost, as to a dead process
        };
        if conn.as_ref().is_none_or(|(a, _)| *a != addr) {
            conn = open(addr, &opener).await.map(|s| (addr, s));
        }
        if let Some((_, s)) = conn.as_mut() {
            if s.write_all(&frame).await.is_err() {
                conn = None;
            }
        }
    }
}
