//! The program's processes: started with torchrun's environment, connected over a Unix socket
//! in a directory only the user can enter, each connection proven with the job's key (the
//! handshake of `ringside launch`, `driver::tcp::auth`) on a thread of its own, then read by the
//! lockstep's thread, which polls every connection and hands their frames to the lockstep in the
//! order each connection carried them (no thread between a frame and the engine).

pub use super::forkserver::Exit;
use super::forkserver::ForkServer;
use super::wire::{self, Reply, Request, MAX_FRAME};
use crate::driver::tcp::auth::{self, Channel, JobKey};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::collections::VecDeque;
use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// What a rank's connection brought.
#[derive(Debug)]
pub enum Event {
    Frame(Request),
    /// The connection closed (the process ended, or closed it).
    Closed,
    /// The connection spoke nonsense.
    Broken(String),
}

/// A process of the job: a child of ours, or one the fork server forked (which reaps it and
/// tells us how it ended).
enum Proc<'s> {
    Own(Child),
    Forked { pid: i32, server: &'s ForkServer },
}

impl Proc<'_> {
    fn id(&self) -> u32 {
        match self {
            Proc::Own(c) => c.id(),
            Proc::Forked { pid, .. } => *pid as u32,
        }
    }

    fn try_wait(&mut self) -> Option<Exit> {
        match self {
            Proc::Own(c) => c.try_wait().ok().flatten().map(exit_of),
            Proc::Forked { pid, server } => server.exit_of(*pid),
        }
    }

    /// Kills it (SIGKILL) and waits for its end.
    fn kill(&mut self) -> Option<Exit> {
        match self {
            Proc::Own(c) => {
                let _ = c.kill();
                c.wait().ok().map(exit_of)
            }
            Proc::Forked { pid, server } => {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(*pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
                // the server reaps it within its next poll
                for _ in 0..2_000 {
                    if let Some(e) = server.exit_of(*pid) {
                        return Some(e);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Some(Exit::Signal(9))
            }
        }
    }
}

/// The processes of one job and their connections.
pub struct Jobs<'s> {
    dir: PathBuf,
    children: Vec<Option<Proc<'s>>>,
    /// Each rank's connection while it is open.
    conns: Vec<Option<Conn>>,
    /// Connections proven (or refused) by the accepting thread.
    rx: mpsc::Receiver<(u32, Incoming)>,
    /// Events read and not handed out yet.
    ready: VecDeque<(u32, Event)>,
    exits: Vec<Option<Exit>>,
    /// Ranks whose connection was proven.
    connected: Vec<bool>,
}

enum Incoming {
    Connected(UnixStream),
    Refused(String),
}

/// How much of a connection is read at once (a frame larger than this grows its buffer).
const READ: usize = 1 << 16;

/// A rank's connection: the stream (blocking: it is read only when `poll` says it can be, and
/// replies are written whole) and what was read of it but not decoded yet, `buf[start..end]`.
struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Conn {
    fn new(stream: UnixStream) -> Conn {
        Conn {
            stream,
            buf: vec![0; READ],
            start: 0,
            end: 0,
        }
    }

    /// The next whole frame read, decoded, if any: Err ends the connection.
    fn frame(&mut self) -> Option<Result<Request, String>> {
        let have = &self.buf[self.start..self.end];
        let len: [u8; 4] = have.get(..4)?.try_into().expect("4 bytes");
        let n = u32::from_be_bytes(len) as usize;
        if n > MAX_FRAME {
            return Some(Err(format!("a frame of {n} bytes (at most {MAX_FRAME})")));
        }
        let body = have.get(4..4 + n)?;
        let req = wire::decode(body).map_err(|e| e.to_string());
        self.start += 4 + n;
        Some(req)
    }

    /// Reads what the stream has (one system call): false when it ended.
    fn read(&mut self) -> bool {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
            if self.buf.len() > READ {
                // a large frame is gone: so is its room
                self.buf.truncate(READ);
                self.buf.shrink_to_fit();
            }
        }
        // room from `start` for the frame begun (its length read) or a read's worth; what is
        // there is less than that frame, else it would have been decoded
        let frame = match self.buf[self.start..self.end].get(..4) {
            Some(len) => 4 + u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize,
            None => 4,
        };
        let want = frame.clamp(READ, 4 + MAX_FRAME);
        if self.start + want > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
            if self.buf.len() < want {
                self.buf.resize(want, 0);
            }
        }
        loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(0) => return false,
                Ok(k) => {
                    self.end += k;
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return e.kind() == io::ErrorKind::WouldBlock,
            }
        }
    }
}

/// What to start.
pub struct Spawn<'a> {
    pub program: &'a [String],
    pub nproc: u32,
    /// Where the children's standard output goes: ours, or our standard error.
    pub stdout_to_stderr: bool,
    /// The children's standard output and error go nowhere (property testing's cases).
    pub silent: bool,
    /// The directory they run in (default: ours); not for forked processes.
    pub cwd: Option<&'a Path>,
}

/// torchrun's environment for `rank` of `n`, and ringside's own variables.
fn rank_env(
    rank: u32,
    n: u32,
    port: u16,
    job: u64,
    socket: &Path,
    key_file: &Path,
) -> Vec<(String, String)> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    [
        ("RANK", rank.to_string()),
        ("LOCAL_RANK", rank.to_string()),
        ("WORLD_SIZE", n.to_string()),
        ("LOCAL_WORLD_SIZE", n.to_string()),
        ("GROUP_RANK", "0".to_string()),
        ("ROLE_RANK", rank.to_string()),
        ("ROLE_WORLD_SIZE", n.to_string()),
        ("MASTER_ADDR", "127.0.0.1".to_string()),
        ("MASTER_PORT", port.to_string()),
        ("TORCHELASTIC_RUN_ID", format!("ringside-{job:016x}")),
        ("RINGSIDE_TORCH_SOCKET", path(socket)),
        ("RINGSIDE_TORCH_KEY_FILE", path(key_file)),
        ("RINGSIDE_TORCH_JOB", format!("{job:016x}")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

fn private_dir() -> io::Result<PathBuf> {
    let tag: [u8; 8] = auth::random_bytes()?;
    let name: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("ringside-torch-{name}"));
    fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl<'s> Jobs<'s> {
    /// Starts `spawn.nproc` processes of the program, forked by `server` when given; their
    /// backend connects back.
    pub fn start(spawn: &Spawn, server: Option<&'s ForkServer>) -> io::Result<Jobs<'s>> {
        let Some((exe, args)) = spawn.program.split_first() else {
            return Err(io::Error::other("no program to run (after --)"));
        };
        let dir = private_dir()?;
        let key = JobKey::random()?;
        let job = u64::from_be_bytes(auth::random_bytes()?);
        let key_file = dir.join("key");
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&key_file)?
            .write_all(key.to_hex().as_bytes())?;
        let socket = dir.join("socket");
        let listener = UnixListener::bind(&socket)?;
        let (tx, rx) = mpsc::channel();
        let n = spawn.nproc;
        std::thread::spawn(move || accept(listener, key, job, n, tx));
        let port = free_port()?;
        let mut children = Vec::new();
        for rank in 0..n {
            let env = rank_env(rank, n, port, job, &socket, &key_file);
            if let Some(server) = server {
                let mut all: Vec<(String, String)> = std::env::vars_os()
                    .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                    .filter(|(k, _)| !env.iter().any(|(e, _)| e == k))
                    .collect();
                all.extend(env);
                let pid = server.fork(args, &all, spawn.silent)?;
                children.push(Some(Proc::Forked { pid, server }));
                continue;
            }
            let mut cmd = Command::new(exe);
            cmd.args(args).envs(env).stdin(Stdio::null());
            if let Some(dir) = spawn.cwd {
                cmd.current_dir(dir);
            }
            if spawn.silent {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            } else if spawn.stdout_to_stderr {
                cmd.stdout(io::stderr());
            }
            let child = cmd
                .spawn()
                .map_err(|e| io::Error::new(e.kind(), format!("cannot start {exe}: {e}")))?;
            children.push(Some(Proc::Own(child)));
        }
        Ok(Jobs {
            dir,
            children,
            conns: (0..n).map(|_| None).collect(),
            rx,
            ready: VecDeque::new(),
            exits: vec![None; n as usize],
            connected: vec![false; n as usize],
        })
    }

    /// How many ranks the job has.
    pub fn ranks(&self) -> usize {
        self.children.len()
    }

    /// The next frame or end of any rank, waiting at most `wait`. A rank whose process ended
    /// without ever connecting ends here too.
    pub fn next_event(&mut self, wait: Duration) -> Option<(u32, Event)> {
        // connections come from the accepting thread: while a rank may still connect, the
        // connections are polled in short slices and the thread's news taken in between
        const SLICE: Duration = Duration::from_millis(5);
        loop {
            self.take_connections();
            if let Some(ev) = self.ready.pop_front() {
                return Some(ev);
            }
            let expecting = self.connected.iter().any(|c| !c);
            let slice = if expecting { wait.min(SLICE) } else { wait };
            let mut fds = Vec::with_capacity(self.conns.len());
            let mut ranks = Vec::with_capacity(self.conns.len());
            for (rank, c) in self.conns.iter().enumerate() {
                if let Some(c) = c {
                    fds.push(PollFd::new(c.stream.as_fd(), PollFlags::POLLIN));
                    ranks.push(rank);
                }
            }
            if fds.is_empty() {
                match self.rx.recv_timeout(slice) {
                    Ok(got) => {
                        self.take(got);
                        continue;
                    }
                    Err(_) => return self.ended_unconnected(),
                }
            }
            let timeout = PollTimeout::try_from(slice).unwrap_or(PollTimeout::MAX);
            match poll(&mut fds, timeout) {
                Ok(0) => {
                    if expecting && self.rx_pending() {
                        continue;
                    }
                    return self.ended_unconnected();
                }
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return self.ended_unconnected(),
            }
            let readable: Vec<usize> = fds
                .iter()
                .zip(&ranks)
                .filter(|(fd, _)| fd.any().unwrap_or(true))
                .map(|(_, r)| *r)
                .collect();
            drop(fds);
            for rank in readable {
                self.read(rank);
            }
        }
    }

    /// Whether the accepting thread has news.
    fn rx_pending(&mut self) -> bool {
        match self.rx.try_recv() {
            Ok(got) => {
                self.take(got);
                true
            }
            Err(_) => false,
        }
    }

    fn take_connections(&mut self) {
        while let Ok(got) = self.rx.try_recv() {
            self.take(got);
        }
    }

    fn take(&mut self, (rank, incoming): (u32, Incoming)) {
        match incoming {
            Incoming::Connected(s) => {
                self.connected[rank as usize] = true;
                self.conns[rank as usize] = Some(Conn::new(s));
            }
            Incoming::Refused(why) => eprintln!("ringside torchrun: {why}"),
        }
    }

    /// Reads `rank`'s connection once and queues the whole frames it brought, or its end.
    fn read(&mut self, rank: usize) {
        let Some(c) = self.conns[rank].as_mut() else {
            return;
        };
        let open = c.read();
        let mut end = None;
        while let Some(frame) = c.frame() {
            match frame {
                Ok(req) => self.ready.push_back((rank as u32, Event::Frame(req))),
                Err(why) => {
                    end = Some(Event::Broken(why));
                    break;
                }
            }
        }
        let end = end.or((!open).then_some(Event::Closed));
        if let Some(ev) = end {
            // nothing after the end of a connection, or after nonsense, is read
            self.ready.push_back((rank as u32, ev));
            self.conns[rank] = None;
        }
    }

    /// A rank whose process ended without connecting (it never built a process group).
    fn ended_unconnected(&mut self) -> Option<(u32, Event)> {
        for rank in 0..self.children.len() {
            if self.connected[rank] || self.exits[rank].is_some() {
                continue;
            }
            let Some(c) = self.children[rank].as_mut() else {
                continue;
            };
            if let Some(exit) = c.try_wait() {
                self.exits[rank] = Some(exit);
                self.connected[rank] = true; // nothing more can come
                return Some((rank as u32, Event::Closed));
            }
        }
        None
    }

    /// Sends `reply` to `rank` (a rank whose connection is gone gets nothing).
    pub fn reply(&mut self, rank: u32, reply: &Reply) {
        if let Some(c) = self.conns[rank as usize].as_mut() {
            // a process that is gone cannot take it: its end is read as the connection's
            let _ = c.stream.write_all(&wire::encode(reply));
        }
    }

    /// Kills `rank`'s process (SIGKILL).
    pub fn kill(&mut self, rank: u32) {
        if let Some(c) = self.children[rank as usize].as_mut() {
            if self.exits[rank as usize].is_none() {
                self.exits[rank as usize] = c.kill();
            }
        }
        self.conns[rank as usize] = None;
    }

    /// The CPU time `rank`'s process has used so far (Linux: from /proc).
    pub fn cpu_time(&self, rank: u32) -> Option<Duration> {
        let pid = self.children.get(rank as usize)?.as_ref()?.id();
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = after.split(' ').collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        // clock ticks are 1/100 s on Linux
        Some(Duration::from_millis(ticks * 10))
    }

    /// Waits for every process to end (killing what is left after `grace`), and gives how
    /// each ended.
    pub fn finish(&mut self, grace: Duration) -> Vec<Option<Exit>> {
        const POLL: Duration = Duration::from_millis(5);
        // counted in polls rather than read from a clock
        let mut polls = grace.as_millis() / POLL.as_millis();
        for (rank, c) in self.children.iter_mut().enumerate() {
            let Some(c) = c.as_mut() else { continue };
            if self.exits[rank].is_some() {
                continue;
            }
            loop {
                match c.try_wait() {
                    Some(exit) => {
                        self.exits[rank] = Some(exit);
                        break;
                    }
                    None if polls > 0 => {
                        polls -= 1;
                        std::thread::sleep(POLL)
                    }
                    None => {
                        self.exits[rank] = c.kill();
                        break;
                    }
                }
            }
        }
        self.exits.clone()
    }
}

impl Drop for Jobs<'_> {
    fn drop(&mut self) {
        for c in self.children.iter_mut().flatten() {
            if c.try_wait().is_none() {
                c.kill();
            }
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn exit_of(s: ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(sig)) => Exit::Signal(sig),
        _ => Exit::Code(-1),
    }
}

/// Accepts connections: each must prove the key for a rank of the job that has not connected.
fn accept(
    listener: UnixListener,
    key: JobKey,
    job: u64,
    n: u32,
    tx: mpsc::Sender<(u32, Incoming)>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build();
    let Ok(rt) = rt else {
        return;
    };
    let mut seen = vec![false; n as usize];
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let proven = rt.block_on(async {
            stream.set_nonblocking(true)?;
            let mut s = tokio::net::UnixStream::from_std(stream)?;
            let claim = tokio::time::timeout(
                Duration::from_secs(10),
                auth::verify(&mut s, &key, Channel::Control, job),
            )
            .await
            .map_err(|_| io::Error::other("no proof within 10 s"))?
            .map_err(io::Error::other)?;
            let s = s.into_std()?;
            s.set_nonblocking(false)?;
            Ok::<_, io::Error>((claim, s))
        });
        let (claim, s) = match proven {
            Ok(x) => x,
            Err(e) => {
                let _ = tx.send((
                    0,
                    Incoming::Refused(format!("a connection was refused: {e}")),
                ));
                continue;
            }
        };
        let rank = claim.rank;
        if rank >= n || seen[rank as usize] {
            let _ = tx.send((
                0,
                Incoming::Refused(format!(
                    "a connection claimed rank {rank}, which is not a rank waiting to connect"
                )),
            ));
            continue;
        }
        seen[rank as usize] = true;
        if tx.send((rank, Incoming::Connected(s))).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut f = (body.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(body);
        f
    }

    fn wait(work: u32) -> Vec<u8> {
        let mut b = vec![3u8];
        b.extend(work.to_be_bytes());
        frame(&b)
    }

    /// Every frame `c` has, reading until the writer's end.
    fn drain(c: &mut Conn) -> Vec<Result<Request, String>> {
        let mut out = Vec::new();
        loop {
            let open = c.read();
            while let Some(f) = c.frame() {
                let end = f.is_err();
                out.push(f);
                if end {
                    return out;
                }
            }
            if !open {
                return out;
            }
        }
    }

    #[test]
    fn frames_split_anyhow_and_larger_than_a_read_come_whole_and_in_order() {
        let (mut w, r) = UnixStream::pair().expect("a socket pair");
        let members = 40_000u32; // a frame of 160 KB, more than one read's room
        let mut group = vec![1u8, 0, 1, b'g'];
        group.extend(members.to_be_bytes());
        (0..members).for_each(|m| group.extend(m.to_be_bytes()));
        group.extend(0u64.to_be_bytes());
        let mut bytes = wait(1);
        bytes.extend(frame(&group));
        bytes.extend(wait(2));
        let writer = std::thread::spawn(move || {
            // in pieces that cut through lengths and bodies
            for piece in bytes.chunks(3_001) {
                w.write_all(piece).expect("written");
            }
        });
        let mut c = Conn::new(r);
        let got = drain(&mut c);
        writer.join().expect("the writer");
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], Ok(Request::Wait { work: 1 }));
        let Ok(Request::Group { ranks, .. }) = &got[1] else {
            panic!("a group: {:?}", got[1])
        };
        assert_eq!(ranks.len(), members as usize);
        assert_eq!(got[2], Ok(Request::Wait { work: 2 }));
        assert_eq!(c.buf.len(), READ, "the large frame's room is given back");
    }

    #[test]
    fn an_oversized_length_is_refused_before_its_body_is_read() {
        let (mut w, r) = UnixStream::pair().expect("a socket pair");
        let mut bytes = wait(1);
        bytes.extend(((MAX_FRAME + 1) as u32).to_be_bytes());
        w.write_all(&bytes).expect("written");
        let mut c = Conn::new(r);
        let got = drain(&mut c);
        assert_eq!(got[0], Ok(Request::Wait { work: 1 }));
        assert!(got[1].as_ref().unwrap_err().contains("at most"), "{got:?}");
        assert!(c.buf.len() <= READ, "nothing was allocated for it");
    }
}
