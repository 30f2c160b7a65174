//! An attacker on the same machine: starts a long real run with `--verbose`, learns its
//! addresses (as anyone could, from `ss` or a port scan) and its job id (as anyone could, from
//! the workers' command lines), then talks to it.

use super::common;
use ringside_sim::driver::tcp::auth::{self, Channel, Claim, JobKey};
use ringside_sim::driver::tcp::wire::{self, Envelope, Frame};
use ringside_sim::proto::vocab::{Algorithm, Dtype, OpKind, ReduceOp};
use ringside_sim::proto::{Buffer, CollMsg, Fingerprint, Generation, GroupId, Msg, SeqNo};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};

/// A scenario that runs for about a second of real time: room for the attacks.
pub const LONG: &str = r#"
[world]
size = 4
[group]
timeout = "2s"
[workload]
iterations = 20
compute = "60ms"
elements = 32
[[workload.ops]]
op = "allreduce"
bytes = "16MiB"
"#;

/// A running `launch --json --verbose` and what it said about itself.
pub struct Run {
    pub child: Child,
    pub work: PathBuf,
    pub rendezvous: String,
    pub node0: String,
    /// stderr lines read while waiting for the addresses.
    pub said: Vec<String>,
    stderr: BufReader<ChildStderr>,
}

impl Run {
    /// Starts `launch` on `path` with its workdir in `dir`; `key`: the job key it is told to
    /// use.
    pub fn start(dir: &Path, path: &Path, key: Option<&JobKey>) -> Run {
        let work = dir.join("work");
        let mut cmd = Command::new(common::bin());
        cmd.env_remove("TMPDIR");
        let workdir = ["--workdir", work.to_str().expect("utf-8")];
        Run::spawn(cmd, path, key, &workdir, work.clone())
    }

    /// [`Run::start`] with at most `files` open files for launch and its workers (the shell's
    /// `ulimit -n`, soft and hard alike).
    pub fn start_with_open_files(dir: &Path, path: &Path, key: Option<&JobKey>, files: u32) -> Run {
        let work = dir.join("work");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
            .arg(common::bin())
            .env_remove("TMPDIR");
        let workdir = ["--workdir", work.to_str().expect("utf-8")];
        Run::spawn(cmd, path, key, &workdir, work.clone())
    }

    /// Starts `launch` on `path` with its default, temporary workdir, under `tmp`.
    pub fn start_in_temp(tmp: &Path, path: &Path) -> Run {
        let mut cmd = Command::new(common::bin());
        cmd.env("TMPDIR", tmp);
        Run::spawn(cmd, path, None, &[], tmp.to_path_buf())
    }

    fn spawn(
        mut cmd: Command,
        path: &Path,
        key: Option<&JobKey>,
        extra: &[&str],
        work: PathBuf,
    ) -> Run {
        cmd.args([
            "launch",
            path.to_str().expect("utf-8"),
            "--json",
            "--verbose",
        ])
        .args(extra)
        .env_remove("RINGSIDE_JOB_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if let Some(k) = key {
            cmd.env("RINGSIDE_JOB_KEY", k.to_hex());
        }
        let mut child = cmd.spawn().expect("launch starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let (mut rendezvous, mut node0, mut said) = (None, None, Vec::new());
        let mut line = String::new();
        while node0.is_none() {
            line.clear();
            if stderr.read_line(&mut line).expect("read stderr") == 0 {
                break;
            }
            let l = line.trim();
            if let Some(a) = l.strip_prefix("launch: rendezvous on ") {
                rendezvous = Some(a.to_string());
            }
            if let Some(a) = l.strip_prefix("launch: node 0 listening on ") {
                node0 = Some(a.to_string());
            }
            said.push(l.to_string());
        }
        Run {
            child,
            work,
            rendezvous: rendezvous.expect("launch names its rendezvous"),
            node0: node0.unwrap_or_else(|| panic!("launch names node 0's address: {said:?}")),
            said,
            stderr,
        }
    }

    /// The workers' process ids and command lines.
    pub fn workers(&self) -> Vec<(u32, Vec<String>)> {
        let pid = self.child.id();
        let mut found = Vec::new();
        for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if ppid != Some(pid) {
                continue;
            }
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if let Some(child) = e.file_name().to_str().and_then(|p| p.parse().ok()) {
                found.push((child, args));
            }
        }
        found
    }

    /// The job id, from a worker's command line (readable by any local user).
    pub fn job(&self) -> u64 {
        for (_, args) in self.workers() {
            assert!(
                !args
                    .iter()
                    .any(|a| a.len() >= 64 && a.bytes().all(|b| b.is_ascii_hexdigit())),
                "a key-like argument on a worker's command line: {args:?}"
            );
            if let Some(i) = args.iter().position(|a| a == "--job") {
                return args[i + 1].parse().expect("a job id");
            }
        }
        panic!("no worker of launch {} found", self.child.id());
    }

    /// Waits for the end.
    pub fn finish(mut self) -> Ended {
        let mut rest = String::new();
        let _ = self.stderr.read_to_string(&mut rest);
        let out = self.child.wait_with_output().expect("launch ends");
        Ended {
            code: out.status.code(),
            report: serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null),
            stderr: self.said.join("\n") + "\n" + &rest,
            work: self.work,
        }
    }
}

/// How a run ended: exit code, report, all of launch's stderr, and its workdir.
pub struct Ended {
    pub code: Option<i32>,
    pub report: serde_json::Value,
    pub stderr: String,
    work: PathBuf,
}

impl Ended {
    /// The log of `rank`'s first process.
    pub fn log(&self, rank: u32) -> String {
        std::fs::read_to_string(self.work.join(format!("rank-{rank}.0.log"))).unwrap_or_default()
    }

    /// The run ended as if nobody had attacked it.
    pub fn undisturbed(&self, calls: usize) {
        let r = &self.report;
        assert_eq!(self.code, Some(0), "{r:#}\n{}", self.stderr);
        assert_eq!(r["outcome"], "completed", "{r:#}");
        let ops = r["ops"].as_array().expect("ops");
        assert_eq!(ops.len(), calls, "{r:#}");
        assert!(ops.iter().all(|op| op["correct"] == true), "{r:#}");
    }
}

/// A collective chunk of group 0, from `from`, for call `seq`, of `floats` values.
pub fn chunk(job: u64, from: u32, seq: u64, floats: usize) -> Vec<u8> {
    wire::encode(&Frame::Message(Envelope {
        job,
        from,
        incarnation: 0,
        generation: 0,
        id: seq,
        bytes: 16 << 20,
        reliable: true,
        msg: Msg::Coll(Box::new(CollMsg {
            fp: Fingerprint {
                group: GroupId(0),
                generation: Generation(0),
                seq: SeqNo(seq),
                op: OpKind::Allreduce,
                algorithm: Algorithm::Ring,
                bytes: 16 << 20,
                dtype: Dtype::F32,
                root: 0,
                reduce: ReduceOp::Sum,
                elements: 32,
            },
            step: 0,
            data: Buffer::F32(vec![1e9; floats]),
        })),
    }))
}

/// A message frame of [`chunk`] with its job id set to `job`.
pub fn with_job(mut frame: Vec<u8>, job: u64) -> Vec<u8> {
    // length (4 bytes), version, type, then the job
    frame[6..14].copy_from_slice(&job.to_be_bytes());
    frame
}

/// The hello of `rank` in job `job`.
pub fn hello(job: u64, rank: u32) -> Vec<u8> {
    wire::encode(&Frame::Hello {
        job,
        rank,
        incarnation: 0,
    })
}

/// Opens `addr` and proves `key` for `claim` (true: the other side accepted and proved the
/// key back), then writes `after`. The connection stays open until the run ends.
pub fn authenticate(addr: &str, key: &JobKey, claim: Claim, after: &[u8]) -> (bool, TcpStream) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let s = TcpStream::connect(addr).expect("connect");
    s.set_nonblocking(true).expect("nonblocking");
    let (ok, s) = rt.block_on(async {
        let mut s = tokio::net::TcpStream::from_std(s).expect("tokio stream");
        let ok = auth::prove(&mut s, key, claim).await.is_ok();
        (ok, s.into_std().expect("std stream"))
    });
    s.set_nonblocking(false).expect("blocking");
    let mut s = s;
    if ok {
        let _ = s.write_all(after);
    }
    (ok, s)
}

pub fn claim(channel: Channel, job: u64, rank: u32) -> Claim {
    Claim {
        channel,
        job,
        rank,
        incarnation: 0,
    }
}
