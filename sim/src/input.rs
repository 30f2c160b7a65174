//! Opening the files a user names: regular files only, read within a size.
//!
//! Scenarios, traces and Flight Recorder dumps are named on the command line or found in a
//! directory, and a name can point at anything: a FIFO, whose `open` waits for a writer that
//! never comes; a device such as `/dev/zero`, whose metadata says it is empty and whose reads
//! never end; a directory. [`open`] refuses all of these before reading a byte, without
//! blocking (the file is opened non-blocking and asked what it is), and [`read`] enforces its
//! size limit on the bytes it reads, not on what the metadata said a moment before: a file
//! that grows while it is read is cut at the limit and refused.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (a symbolic link is followed). The error
/// says what else it is.
pub fn open(path: &Path) -> std::io::Result<File> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; on a regular
    // file the flag changes nothing
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = f.metadata()?.file_type();
    if kind.is_file() {
        return Ok(f);
    }
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a file"
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file: only regular files are read"),
    ))
}

/// Why [`read`] failed.
#[derive(Debug)]
pub enum ReadError {
    /// It cannot be opened or read, or is not a regular file.
    Io(std::io::Error),
    /// It holds more than the limit (of so many bytes).
    TooLarge(u64),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::TooLarge(limit) => {
                write!(
                    f,
                    "larger than {} (the most that is read)",
                    fmt_limit(*limit)
                )
            }
        }
    }
}

/// `1 GiB`, `64 MiB`, or bytes.
fn fmt_limit(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// Reads the regular file `path` into `buf` (cleared first), refusing one of more than `limit`
/// bytes: by its size before reading, and by the bytes read, in case it grew.
pub fn read(path: &Path, limit: u64, buf: &mut Vec<u8>) -> Result<(), ReadError> {
    buf.clear();
    let f = open(path).map_err(ReadError::Io)?;
    let len = f.metadata().map_err(ReadError::Io)?.len();
    if len > limit {
        return Err(ReadError::TooLarge(limit));
    }
    buf.reserve(len as usize);
    f.take(limit.saturating_add(1))
        .read_to_end(buf)
        .map_err(ReadError::Io)?;
    if buf.len() as u64 > limit {
        buf.clear();
        return Err(ReadError::TooLarge(limit));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_opened() {
        let e = open(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = open(Path::new("/")).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let dir = std::env::temp_dir().join(format!("ringside-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // returns at once, though no one writes to it
        let e = open(&fifo).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let file = dir.join("file");
        std::fs::write(&file, b"12345").unwrap();
        let mut buf = Vec::new();
        read(&file, 5, &mut buf).unwrap();
        assert_eq!(buf, b"12345");
        let e = read(&file, 4, &mut buf).unwrap_err();
        assert_eq!(e.to_string(), "larger than 4 bytes (the most that is read)");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
