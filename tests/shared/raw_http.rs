//! Reading raw HTTP/1.1 requests in hand-written test servers (shared by the test
//! binaries through `#[path]`).

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads one request head and its Content-Length body; `None` on EOF, junk, more
/// than 1 MiB, or 5 s of silence.
pub async fn read_request(socket: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        read_some(socket, &mut chunk, &mut buffer).await?;
        if let Some(position) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break position + 4;
        }
        if buffer.len() > 1 << 20 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    if length > 1 << 20 {
        return None;
    }
    while buffer.len() < head_end + length {
        read_some(socket, &mut chunk, &mut buffer).await?;
    }
    Some(String::from_utf8_lossy(&buffer).into_owned())
}

async fn read_some(socket: &mut TcpStream, chunk: &mut [u8], buffer: &mut Vec<u8>) -> Option<()> {
    let n = tokio::time::timeout(Duration::from_secs(5), socket.read(chunk))
        .await
        .ok()?
        .ok()?;
    if n == 0 {
        return None;
    }
    buffer.extend_from_slice(&chunk[..n]);
    Some(())
}
