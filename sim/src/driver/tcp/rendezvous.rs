//! `launch`'s side of the control channel: the rendezvous address every worker registers at,
//! then reports its standing on. Every line is checked; a bad one closes that connection.

use super::auth::{self, Channel, JobKey};
use super::control::{self, Standing, ToLaunch};
use super::gate::{Gate, Ticket};
use std::net::SocketAddr;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What a worker said, on control connection number `conn`.
pub(super) enum Note {
    Hello {
        conn: u64,
        rank: u32,
        incarnation: u32,
        addr: SocketAddr,
        ctl: OwnedWriteHalf,
    },
    Status {
        conn: u64,
        rank: u32,
        incarnation: u32,
        standing: Standing,
    },
}

/// Accepts control connections: a proof of the job's key (its turn at the gate), a hello,
/// then status lines, each checked.
pub(super) async fn accept(
    listener: TcpListener,
    tx: mpsc::UnboundedSender<Note>,
    key: JobKey,
    job: u64,
    nodes: u32,
) {
    let key = std::sync::Arc::new(key);
    let gate = Gate::new(nodes, "launch");
    for conn in 0.. {
        let (stream, peer) = gate.accept(&listener).await;
        let ticket = gate.admit(peer);
        let (tx, key) = (tx.clone(), key.clone());
        let c = Conn {
            conn,
            peer,
            job,
            nodes,
        };
        tokio::spawn(async move {
            if let Err(e) = control_conn(stream, c, &tx, &key, ticket).await {
                eprintln!("launch: closing the control connection from {peer}: {e}");
            }
        });
    }
}

/// One control connection: its number, where it comes from, and the job it must be for.
struct Conn {
    conn: u64,
    peer: SocketAddr,
    job: u64,
    nodes: u32,
}

async fn control_conn(
    mut stream: TcpStream,
    c: Conn,
    tx: &mpsc::UnboundedSender<Note>,
    key: &JobKey,
    ticket: Ticket,
) -> Result<(), String> {
    let Conn {
        conn,
        peer,
        job,
        nodes,
    } = c;
    let proof = auth::verify(&mut stream, key, Channel::Control, job);
    let claim = ticket
        .handshake(proof)
        .await
        .map_err(|cut| cut.to_string())?
        .map_err(|e| e.to_string())?;
    let (read, write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut buf = String::new();
    let (rank, incarnation) = match read_msg(&mut reader, &mut buf).await? {
        None => return Ok(()),
        Some(ToLaunch::Hello {
            job: j,
            rank,
            incarnation,
            port,
        }) => {
            if j != job || rank >= nodes {
                return Err(format!("hello from node {rank} of job {j:#x}: not ours"));
            }
            // the connection speaks only for the node it proved
            if (rank, incarnation) != (claim.rank, claim.incarnation) {
                return Err(format!(
                    "hello from node {rank}.{incarnation} on a connection proven for {}.{}",
                    claim.rank, claim.incarnation
                ));
            }
            let addr = SocketAddr::new(peer.ip(), port);
            let _ = tx.send(Note::Hello {
                conn,
                rank,
                incarnation,
                addr,
                ctl: write,
            });
            (rank, incarnation)
        }
        Some(ToLaunch::Status(_)) => return Err("status before hello".into()),
    };
    while let Some(msg) = read_msg(&mut reader, &mut buf).await? {
        if let ToLaunch::Status(standing) = msg {
            let _ = tx.send(Note::Status {
                conn,
                rank,
                incarnation,
                standing,
            });
        }
    }
    Ok(())
}

async fn read_msg(
    reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    buf: &mut String,
) -> Result<Option<ToLaunch>, String> {
    buf.clear();
    let n = reader
        .take(control::MAX_LINE as u64)
        .read_line(buf)
        .await
        .map_err(|e| e.to_string())?;
    if n == 0 {
        return Ok(None);
    }
    serde_json::from_str(buf.trim_end())
        .map(Some)
        .map_err(|e| format!("malformed control line: {e}"))
}
