//! The program's processes: started with torchrun's environment, connected over a Unix socket
//! in a directory only the user can enter, each connection proven with the job's key (the
//! handshake of `ringside launch`, `driver::tcp::auth`), its frames read on a thread of its own
//! and handed to the lockstep in the order each connection carried them.

pub use super::forkserver::Exit;
use super::forkserver::ForkServer;
use super::wire::{self, Reply, Request, MAX_FRAME};
use crate::driver::tcp::auth::{self, Channel, JobKey};
use std::fs;
use std::io::{self, Read, Write};
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
    writers: Vec<Option<UnixStream>>,
    rx: mpsc::Receiver<(u32, Incoming)>,
    exits: Vec<Option<Exit>>,
    /// Ranks whose connection was proven.
    connected: Vec<bool>,
}

enum Incoming {
    Connected(UnixStream),
    Event(Event),
    Refused(String),
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
            writers: (0..n).map(|_| None).collect(),
            rx,
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
        loop {
            match self.rx.recv_timeout(wait) {
                Ok((rank, Incoming::Connected(s))) => {
                    self.connected[rank as usize] = true;
                    self.writers[rank as usize] = Some(s);
                }
                Ok((rank, Incoming::Event(e))) => return Some((rank, e)),
                Ok((_, Incoming::Refused(why))) => eprintln!("ringside torchrun: {why}"),
                Err(_) => return self.ended_unconnected(),
            }
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
        if let Some(w) = self.writers[rank as usize].as_mut() {
            if w.write_all(&wire::encode(reply)).is_err() {
                self.writers[rank as usize] = None;
            }
        }
    }

    /// Kills `rank`'s process (SIGKILL).
    pub fn kill(&mut self, rank: u32) {
        if let Some(c) = self.children[rank as usize].as_mut() {
            if self.exits[rank as usize].is_none() {
                self.exits[rank as usize] = c.kill();
            }
        }
        self.writers[rank as usize] = None;
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
        let Ok(reader) = s.try_clone() else { continue };
        if tx.send((rank, Incoming::Connected(s))).is_err() {
            return;
        }
        let tx = tx.clone();
        std::thread::spawn(move || read_frames(rank, reader, tx));
    }
}

/// Reads `rank`'s frames until its connection ends or breaks.
fn read_frames(rank: u32, s: UnixStream, tx: mpsc::Sender<(u32, Incoming)>) {
    // a call and the wait after it come in one write: read in one system call
    let mut s = io::BufReader::with_capacity(1 << 16, s);
    let mut len = [0u8; 4];
    loop {
        let ev = match s.read_exact(&mut len) {
            Err(_) => Event::Closed,
            Ok(()) => {
                let n = u32::from_be_bytes(len) as usize;
                if n > MAX_FRAME {
                    Event::Broken(format!("a frame of {n} bytes (at most {MAX_FRAME})"))
                } else {
                    let mut body = vec![0u8; n];
                    match s.read_exact(&mut body) {
                        Err(_) => Event::Closed,
                        Ok(()) => match wire::decode(&body) {
                            Ok(req) => Event::Frame(req),
                            Err(e) => Event::Broken(e.to_string()),
                        },
                    }
                }
            }
        };
        let end = !matches!(ev, Event::Frame(_));
        if tx.send((rank, Incoming::Event(ev))).is_err() || end {
            return;
        }
    }
}
