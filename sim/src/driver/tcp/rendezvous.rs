//! `launch`'s side of the control channel: the rendezvous address every worker registers at,
//! then reports its standing on. Every line is checked; a bad one closes that connection.

use super::control::{self, Standing, ToLaunch};
use std::net::SocketAddr;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What a worker said.
pub(super) enum Note {
    Hello {
        rank: u32,
        incarnation: u32,
        addr: SocketAddr,
        ctl: OwnedWriteHalf,
    },
    Status {
        rank: u32,
        incarnation: u32,
        standing: Standing,
    },
}

/// Accepts control connections: a hello, then status lines, each checked.
pub(super) async fn accept(
    listener: TcpListener,
    tx: mpsc::UnboundedSender<Note>,
    job: u64,
    nodes: u32,
) {
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            if let Err(e) = control_conn(stream, peer, &tx, job, nodes).await {
                eprintln!("launch: closing the control connection from {peer}: {e}");
            }
        });
    }
}

async fn control_conn(
    stream: TcpStream,
    peer: SocketAddr,
    tx: &mpsc::UnboundedSender<Note>,
    job: u64,
    nodes: u32,
) -> Result<(), String> {
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
            let addr = SocketAddr::new(peer.ip(), port);
            let _ = tx.send(Note::Hello {
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
