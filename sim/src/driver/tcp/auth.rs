//! Who may talk to a real run: every TCP connection of a job, data and control alike, opens
//! with a challenge-response that proves its opener knows the job's key.
//!
//! `launch` draws a random key per job from the operating system and hands it to each worker
//! on the worker's standard input (never its command line, which any local user can read, and
//! never its environment, which outlives the read). The opener (client) and the acceptor
//! (server) then exchange, before any frame or control line:
//!
//! ```text
//! client -> server   nonce_c (32 random bytes)
//! server -> client   nonce_s (32 random bytes)
//! client -> server   claim (channel:u8 job:u64 rank:u32 incarnation:u32)
//!                    HMAC-SHA256(key, "ringside/1 client" nonce_c nonce_s claim)
//! server -> client   HMAC-SHA256(key, "ringside/1 server" nonce_c nonce_s claim)
//! ```
//!
//! The server checks the client's code in constant time, and that the claim names its channel
//! and job; the client checks the server's code the same way. Fresh nonces on both sides make
//! a recorded exchange useless for another connection, and the two labels keep one side's
//! code from serving as the other's. Once proven, the connection belongs to the node and
//! incarnation of its claim: every frame or control line on it must speak for that node.
//!
//! What this does not do: frames after the handshake carry no code of their own (a local
//! user cannot inject into an established loopback TCP connection; root can, and can read
//! the key from the workers' memory anyway), and nothing is encrypted (a real run's data is
//! the scenario's synthetic buffers).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

type HmacSha256 = Hmac<Sha256>;

/// Bytes in a job key.
pub const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 32;
const CODE_LEN: usize = 32;
const CLAIM_LEN: usize = 17;

/// The secret every process of one job shares. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct JobKey([u8; KEY_LEN]);

impl fmt::Debug for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JobKey(..)")
    }
}

/// Random bytes from the operating system (`getrandom`, else `/dev/urandom`).
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| std::io::Error::other(format!("no randomness: {e}")))?;
    Ok(b)
}

impl JobKey {
    /// A fresh key from the operating system's random source.
    pub fn random() -> std::io::Result<JobKey> {
        random_bytes().map(JobKey)
    }

    /// A key written as 64 hexadecimal digits.
    pub fn from_hex(s: &str) -> Result<JobKey, String> {
        let s = s.trim();
        if s.len() != 2 * KEY_LEN || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("a job key is {} hexadecimal digits", 2 * KEY_LEN));
        }
        let mut k = [0u8; KEY_LEN];
        for (i, byte) in k.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
        }
        Ok(JobKey(k))
    }

    /// The key as 64 hexadecimal digits (what a worker reads on its standard input).
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn mac(&self, label: &[u8], nonces: &[u8; 2 * NONCE_LEN], claim: &[u8]) -> HmacSha256 {
        // HMAC takes keys of any length: this cannot fail
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0).expect("any key length");
        m.update(label);
        m.update(nonces);
        m.update(claim);
        m
    }
}

/// Which connection a claim is for: a peer's frames, or the control channel to `launch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Data = 1,
    Control = 2,
}

/// What a proven connection speaks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub channel: Channel,
    pub job: u64,
    pub rank: u32,
    pub incarnation: u32,
}

impl Claim {
    fn encode(&self) -> [u8; CLAIM_LEN] {
        let mut b = [0u8; CLAIM_LEN];
        b[0] = self.channel as u8;
        b[1..9].copy_from_slice(&self.job.to_be_bytes());
        b[9..13].copy_from_slice(&self.rank.to_be_bytes());
        b[13..17].copy_from_slice(&self.incarnation.to_be_bytes());
        b
    }

    fn decode(b: &[u8; CLAIM_LEN]) -> Result<Claim, AuthError> {
        let channel = match b[0] {
            1 => Channel::Data,
            2 => Channel::Control,
            c => return Err(AuthError::Channel(c)),
        };
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut job = [0u8; 8];
        job.copy_from_slice(&b[1..9]);
        Ok(Claim {
            channel,
            job: u64::from_be_bytes(job),
            rank: u32_at(9),
            incarnation: u32_at(13),
        })
    }
}

/// Why a connection was not let in.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("authentication failed: {0}")]
    Io(String),
    #[error("authentication failed: the proof does not match this job's key")]
    BadProof,
    #[error("authentication failed: the other side does not know this job's key")]
    BadServer,
    #[error("authentication failed: unknown channel {0}")]
    Channel(u8),
    #[error("authentication failed: a {0:?} claim on the {1:?} channel")]
    WrongChannel(Channel, Channel),
    #[error("authentication failed: a claim for job {0:#x}, not this job")]
    WrongJob(u64),
}

fn io(e: std::io::Error) -> AuthError {
    AuthError::Io(e.to_string())
}

const CLIENT: &[u8] = b"ringside/1 client";
const SERVER: &[u8] = b"ringside/1 server";

/// The opener's side: proves `claim` with `key` and checks that the other side knows it too.
pub async fn prove<S>(s: &mut S, key: &JobKey, claim: Claim) -> Result<(), AuthError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut nonces = [0u8; 2 * NONCE_LEN];
    let mine: [u8; NONCE_LEN] = random_bytes().map_err(io)?;
    nonces[..NONCE_LEN].copy_from_slice(&mine);
    s.write_all(&mine).await.map_err(io)?;
    s.read_exact(&mut nonces[NONCE_LEN..]).await.map_err(io)?;
    let claim = claim.encode();
    let code = key.mac(CLIENT, &nonces, &claim).finalize().into_bytes();
    let mut msg = [0u8; CLAIM_LEN + CODE_LEN];
    msg[..CLAIM_LEN].copy_from_slice(&claim);
    msg[CLAIM_LEN..].copy_from_slice(&code);
    s.write_all(&msg).await.map_err(io)?;
    let mut theirs = [0u8; CODE_LEN];
    s.read_exact(&mut theirs).await.map_err(io)?;
    key.mac(SERVER, &nonces, &claim)
        .verify_slice(&theirs)
        .map_err(|_| AuthError::BadServer)
}

/// The acceptor's side: checks the opener's proof (for `channel` of `job`) and answers with
/// its own. Returns what the connection speaks for.
pub async fn verify<S>(
    s: &mut S,
    key: &JobKey,
    channel: Channel,
    job: u64,
) -> Result<Claim, AuthError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut nonces = [0u8; 2 * NONCE_LEN];
    s.read_exact(&mut nonces[..NONCE_LEN]).await.map_err(io)?;
    let mine: [u8; NONCE_LEN] = random_bytes().map_err(io)?;
    nonces[NONCE_LEN..].copy_from_slice(&mine);
    s.write_all(&mine).await.map_err(io)?;
    let mut msg = [0u8; CLAIM_LEN + CODE_LEN];
    s.read_exact(&mut msg).await.map_err(io)?;
    let (claim_bytes, code) = msg.split_at(CLAIM_LEN);
    key.mac(CLIENT, &nonces, claim_bytes)
        .verify_slice(code)
        .map_err(|_| AuthError::BadProof)?;
    let mut cb = [0u8; CLAIM_LEN];
    cb.copy_from_slice(claim_bytes);
    let claim = Claim::decode(&cb)?;
    if claim.channel != channel {
        return Err(AuthError::WrongChannel(claim.channel, channel));
    }
    if claim.job != job {
        return Err(AuthError::WrongJob(claim.job));
    }
    let answer = key
        .mac(SERVER, &nonces, claim_bytes)
        .finalize()
        .into_bytes();
    s.write_all(&answer).await.map_err(io)?;
    Ok(claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(channel: Channel) -> Claim {
        Claim {
            channel,
            job: 7,
            rank: 2,
            incarnation: 1,
        }
    }

    async fn exchange(
        client_key: &JobKey,
        server_key: &JobKey,
        c: Claim,
        channel: Channel,
    ) -> (Result<(), AuthError>, Result<Claim, AuthError>) {
        let (mut a, mut b) = tokio::io::duplex(1024);
        let (ck, sk) = (client_key.clone(), server_key.clone());
        let client = tokio::spawn(async move { prove(&mut a, &ck, c).await });
        let server = verify(&mut b, &sk, channel, 7).await;
        drop(b);
        (client.await.expect("client task"), server)
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn the_same_key_proves_both_sides() {
        let k = JobKey::random().expect("randomness");
        let (c, s) = rt().block_on(exchange(&k, &k, claim(Channel::Data), Channel::Data));
        assert_eq!(c, Ok(()));
        assert_eq!(s, Ok(claim(Channel::Data)));
    }

    #[test]
    fn another_key_is_refused_on_both_sides() {
        let k = JobKey::random().expect("randomness");
        let other = JobKey::random().expect("randomness");
        let (c, s) = rt().block_on(exchange(&other, &k, claim(Channel::Data), Channel::Data));
        assert_eq!(s, Err(AuthError::BadProof));
        assert!(c.is_err());
    }

    #[test]
    fn a_claim_for_another_channel_or_job_is_refused() {
        let k = JobKey::random().expect("randomness");
        let (_, s) = rt().block_on(exchange(&k, &k, claim(Channel::Data), Channel::Control));
        assert_eq!(
            s,
            Err(AuthError::WrongChannel(Channel::Data, Channel::Control))
        );
        let foreign = Claim {
            job: 8,
            ..claim(Channel::Data)
        };
        let (_, s) = rt().block_on(exchange(&k, &k, foreign, Channel::Data));
        assert_eq!(s, Err(AuthError::WrongJob(8)));
    }

    #[test]
    fn keys_are_random_and_round_trip_through_hex() {
        let a = JobKey::random().expect("randomness");
        let b = JobKey::random().expect("randomness");
        assert_ne!(a, b);
        assert_eq!(JobKey::from_hex(&a.to_hex()), Ok(a.clone()));
        assert!(JobKey::from_hex("00").is_err());
        assert!(JobKey::from_hex(&"zz".repeat(KEY_LEN)).is_err());
        assert_eq!(format!("{a:?}"), "JobKey(..)");
    }
}
