//! The fork server of `ringside check --torch` (`python/ringside/_forkserver.py`): one Python
//! process that imported torch once and forks the program's processes on request, so that a
//! case of the check does not pay `import torch` in each of its processes.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How a rank's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// How long the server may take to import torch.
const READY_WITHIN: Duration = Duration::from_secs(180);
/// How long it may take to answer a request to fork.
const FORK_WITHIN: Duration = Duration::from_secs(30);

/// A running fork server.
pub struct ForkServer {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    answers: Mutex<mpsc::Receiver<Result<i32, String>>>,
    exits: Arc<Mutex<BTreeMap<i32, Exit>>>,
}

/// Whether `program` is `PYTHON SCRIPT ARGS...` or `PYTHON -m MODULE ARGS...`, which the fork
/// server can run: the interpreter, and what follows it.
pub fn python_program(program: &[String]) -> Option<(&String, &[String])> {
    let (python, rest) = program.split_first()?;
    let name = std::path::Path::new(python).file_name()?.to_str()?;
    if !name.starts_with("python") {
        return None;
    }
    match rest.first().map(String::as_str) {
        Some("-m") if rest.len() >= 2 => Some((python, rest)),
        Some(s) if !s.starts_with('-') => Some((python, rest)),
        _ => None,
    }
}

impl ForkServer {
    /// Starts the fork server with the program's interpreter and waits until it has imported
    /// torch; an error says why it could not (the interpreter lacks torch or the `ringside`
    /// package, or the program is not a Python script or module).
    pub fn start(program: &[String]) -> io::Result<ForkServer> {
        let Some((python, _)) = python_program(program) else {
            return Err(io::Error::other(
                "the program is not `python SCRIPT ...` or `python -m MODULE ...`",
            ));
        };
        let mut child = Command::new(python)
            .args(["-m", "ringside._forkserver"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {python}: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("the fork server has no pipes"));
        };
        let exits = Arc::new(Mutex::new(BTreeMap::new()));
        let (tx, rx) = mpsc::channel();
        let seen = exits.clone();
        std::thread::spawn(move || read_answers(BufReader::new(stdout), tx, seen));
        let server = ForkServer {
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            answers: Mutex::new(rx),
            exits,
        };
        match server.answer(READY_WITHIN)? {
            0 => Ok(server),
            _ => Err(io::Error::other("the fork server did not say it was ready")),
        }
    }

    /// The next answer: a pid (0: ready).
    fn answer(&self, within: Duration) -> io::Result<i32> {
        let rx = self
            .answers
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?;
        match rx.recv_timeout(within) {
            Ok(Ok(pid)) => Ok(pid),
            Ok(Err(why)) => Err(io::Error::other(format!("the fork server: {why}"))),
            Err(_) => Err(io::Error::other(
                "the fork server ended or did not answer (can its python import torch and \
                 the ringside package?)",
            )),
        }
    }

    /// Forks a process running `argv` (what follows `python`) with exactly `env`, in the
    /// current directory; its output goes nowhere when `silent`. Returns its pid.
    pub fn fork(&self, argv: &[String], env: &[(String, String)], silent: bool) -> io::Result<i32> {
        let env: serde_json::Map<String, serde_json::Value> = env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect();
        let cwd = std::env::current_dir()?;
        let req = serde_json::json!({
            "argv": argv,
            "env": env,
            "cwd": cwd.to_string_lossy(),
            "silent": silent,
        });
        {
            let mut w = self
                .stdin
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?;
            writeln!(w, "{req}")?;
            w.flush()?;
        }
        self.answer(FORK_WITHIN)
    }

    /// How process `pid` ended, once the server has reaped it.
    pub fn exit_of(&self, pid: i32) -> Option<Exit> {
        self.exits.lock().ok()?.get(&pid).copied()
    }
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        if let Ok(c) = self.child.get_mut() {
            // closing its input ends it, and it kills what it forked; then make sure
            let _ = c.stdin.take();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Reads the server's answers: pids (and readiness, as pid 0) to `tx`, ends into `exits`.
fn read_answers(
    r: BufReader<std::process::ChildStdout>,
    tx: mpsc::Sender<Result<i32, String>>,
    exits: Arc<Mutex<BTreeMap<i32, Exit>>>,
) {
    for line in r.lines() {
        let Ok(line) = line else { return };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            let _ = tx.send(Err(format!("an answer that is not JSON: {line:.80}")));
            continue;
        };
        let int = |k: &str| v.get(k).and_then(|x| x.as_i64()).map(|x| x as i32);
        if v.get("ready").is_some() {
            let _ = tx.send(Ok(0));
        } else if let Some(pid) = int("pid") {
            let _ = tx.send(Ok(pid));
        } else if let Some(pid) = int("exit") {
            let how = match (int("code"), int("signal")) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(s)) => Exit::Signal(s),
                _ => Exit::Code(-1),
            };
            if let Ok(mut m) = exits.lock() {
                m.insert(pid, how);
            }
        } else {
            let why = v.get("error").and_then(|e| e.as_str()).unwrap_or("?");
            let _ = tx.send(Err(why.to_string()));
        }
    }
}
