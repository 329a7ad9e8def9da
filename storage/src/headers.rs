//! Stored headers: the one form both stores write, and the one reader of every
//! form they ever wrote.
//!
//! New rows hold HTTP/1.1's own field lines, `name: value\r\n` (RFC 9112 §5),
//! the form the journal has always written. The server half wrote
//! `name:value\n` before this crate owned the job; those rows are read as they
//! are, never rewritten. A line says which form it is: a header value cannot
//! hold a CR (RFC 9110 §5.5, and `http::HeaderValue` refuses one), so a line
//! ending in CR is the journal's form and one ending in a bare LF the server's.
//!
//! Why a reader that accepts both rather than a data migration: the two forms
//! never collide, so reading both costs one byte comparison per line, while a
//! migration would rewrite every stored body's row under the write lock at
//! open (a long stall on a large store) and would race a rolling deployment
//! whose older processes still write the old form to the same database.
//!
//! Bytes only, no HTTP types: the stores turn the pairs into
//! `http::HeaderName`/`HeaderValue` and report what those refuse.

/// One stored header: its name's and its value's bytes.
pub type Header<'a> = (&'a [u8], &'a [u8]);

/// Why headers could not be written or read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored headers, line {line}: {problem}")]
pub struct HeaderError {
    line: usize,
    problem: &'static str,
}

impl HeaderError {
    fn new(line: usize, problem: &'static str) -> Self {
        Self { line, problem }
    }

    /// Which header (1-based, in order) or stored line was refused.
    pub fn line(&self) -> usize {
        self.line
    }

    /// What was wrong with it.
    pub fn problem(&self) -> &'static str {
        self.problem
    }
}

/// `headers` as `name: value\r\n` lines, in order (repeated names stay
/// repeated). [`decode`] gives back exactly the pairs written.
///
/// # Errors
/// A name that is empty or holds `:`, CR or LF, or a value that holds CR or LF:
/// such a line could not be read back as written. `http`'s header types never
/// hold these.
///
/// # Examples
/// ```
/// let stored = idempotency_storage::headers::encode([("content-type", "text/plain")])?;
/// assert_eq!(stored, b"content-type: text/plain\r\n");
/// # Ok::<(), idempotency_storage::headers::HeaderError>(())
/// ```
pub fn encode<N, V>(headers: impl IntoIterator<Item = (N, V)>) -> Result<Vec<u8>, HeaderError>
where
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut out = Vec::new();
    for (index, (name, value)) in headers.into_iter().enumerate() {
        let (name, value) = (name.as_ref(), value.as_ref());
        let line = index + 1;
        if name.is_empty() {
            return Err(HeaderError::new(line, "an empty name"));
        }
        if name.iter().any(|&b| matches!(b, b':' | b'\r' | b'\n')) {
            return Err(HeaderError::new(line, "a name holding ':', CR or LF"));
        }
        if value.iter().any(|&b| matches!(b, b'\r' | b'\n')) {
            return Err(HeaderError::new(line, "a value holding CR or LF"));
        }
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    Ok(out)
}

/// The `(name, value)` pairs of a stored headers column, in order, whichever
/// form each line was written in:
///
/// * `name: value\r\n` ([`encode`]'s, and the journal's since 0.2): one space
///   after the colon is the separator, not part of the value (the journal's
///   reader always took it as optional, so `name:value\r\n` reads the same);
/// * `name:value\n` (tower-idempotency 0.1 before this crate): the value is
///   everything after the colon, as written.
///
/// # Errors
/// A line without `:` or with an empty name (an empty line included), a CR
/// inside a line, or a last line without its line end (a row cut short: its
/// last value would otherwise read back shortened). Neither store ever wrote
/// these.
///
/// # Examples
/// ```
/// use idempotency_storage::headers::decode;
///
/// let journal = decode(b"accept: a/b\r\nx-empty: \r\n")?;
/// let server = decode(b"accept:a/b\nx-empty:\n")?;
/// assert_eq!(journal, server);
/// assert_eq!(journal[0], (&b"accept"[..], &b"a/b"[..]));
/// # Ok::<(), idempotency_storage::headers::HeaderError>(())
/// ```
pub fn decode(bytes: &[u8]) -> Result<Vec<Header<'_>>, HeaderError> {
    let mut headers = Vec::new();
    let mut rest = bytes;
    let mut line = 0;
    while !rest.is_empty() {
        line += 1;
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return Err(HeaderError::new(line, "no line end (a row cut short)"));
        };
        let (text, crlf) = match rest[..end].strip_suffix(b"\r") {
            Some(text) => (text, true),
            None => (&rest[..end], false),
        };
        rest = &rest[end + 1..];
        if text.contains(&b'\r') {
            return Err(HeaderError::new(line, "a CR inside the line"));
        }
        let colon = text
            .iter()
            .position(|&b| b == b':')
            .ok_or(HeaderError::new(line, "no ':'"))?;
        if colon == 0 {
            return Err(HeaderError::new(line, "an empty name"));
        }
        let value = &text[colon + 1..];
        let value = match (crlf, value.strip_prefix(b" ")) {
            (true, Some(after_separator)) => after_separator,
            _ => value,
        };
        headers.push((&text[..colon], value));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs<'a>(list: &[(&'a str, &'a [u8])]) -> Vec<Header<'a>> {
        list.iter()
            .map(|&(name, value)| (name.as_bytes(), value))
            .collect()
    }

    /// Rows as each store wrote them before this module, byte for byte: the
    /// journal's encoder (journal/src/headers.rs, 0.2) and the server's
    /// (server/src/store/columns.rs, tower-idempotency 0.1).
    #[test]
    fn both_stores_old_rows_read_back() {
        let expected = pairs(&[
            ("content-type", b"application/json"),
            ("location", b"/p/1?a=b:c"),
            ("accept", b"a/b"),
            ("accept", b"c/d"),
            ("x-opaque", b"a:b \xff\tc"),
            ("x-empty", b""),
        ]);
        let journal_02: &[u8] = b"content-type: application/json\r\n\
            location: /p/1?a=b:c\r\naccept: a/b\r\naccept: c/d\r\n\
            x-opaque: a:b \xff\tc\r\nx-empty: \r\n";
        let server_01: &[u8] = b"content-type:application/json\n\
            location:/p/1?a=b:c\naccept:a/b\naccept:c/d\n\
            x-opaque:a:b \xff\tc\nx-empty:\n";
        assert_eq!(decode(journal_02).unwrap(), expected);
        assert_eq!(decode(server_01).unwrap(), expected);
        // New rows are the journal's form, byte for byte.
        assert_eq!(encode(expected.iter().copied()).unwrap(), journal_02);
    }

    #[test]
    fn each_form_keeps_its_own_meaning_of_a_leading_space() {
        let table: [(&[u8], &[u8]); 6] = [
            // The journal's separator is one space; a second one is the value's.
            (b"x: v\r\n", b"v"),
            (b"x:  v\r\n", b" v"),
            // The journal's reader took the space as optional.
            (b"x:v\r\n", b"v"),
            // The server wrote the value right after the colon, spaces and all.
            (b"x:v\n", b"v"),
            (b"x: v\n", b" v"),
            (b"x:\n", b""),
        ];
        for (stored, value) in table {
            assert_eq!(
                decode(stored).unwrap(),
                [(&b"x"[..], value)],
                "{}",
                String::from_utf8_lossy(stored)
            );
        }
    }

    #[test]
    fn a_row_may_mix_the_forms_line_by_line() {
        let decoded = decode(b"a: 1\r\nb: 2\nc:3\r\n").unwrap();
        assert_eq!(decoded, pairs(&[("a", b"1"), ("b", b" 2"), ("c", b"3")]),);
    }

    #[test]
    fn what_encode_accepts_reads_back_unchanged() {
        let values: [&[u8]; 7] = [
            b"",
            b" ",
            b"  lead",
            b"trail ",
            b"a: b",
            b"\t\xff\x80",
            b":",
        ];
        let names = ["x", "content-type", "X-Mixed-Case"];
        for name in names {
            for value in values {
                let headers = [(name.as_bytes(), value), (name.as_bytes(), value)];
                let stored = encode(headers).unwrap();
                assert_eq!(decode(&stored).unwrap(), headers, "{name} {value:?}");
            }
        }
        assert_eq!(
            encode(std::iter::empty::<(&str, &str)>()).unwrap(),
            b"",
            "no headers, no bytes"
        );
        assert!(decode(b"").unwrap().is_empty());
    }

    #[test]
    fn what_could_not_read_back_is_refused_when_written() {
        let table: [(&str, &[u8], &str); 6] = [
            ("", b"v", "an empty name"),
            ("a:b", b"v", "a name holding ':', CR or LF"),
            ("a\nb", b"v", "a name holding ':', CR or LF"),
            ("a\rb", b"v", "a name holding ':', CR or LF"),
            ("x", b"v\r\ny: injected", "a value holding CR or LF"),
            ("x", b"v\n", "a value holding CR or LF"),
        ];
        for (name, value, problem) in table {
            let error = encode([("ok", &b"1"[..]), (name, value)]).unwrap_err();
            assert_eq!((error.line(), error.problem()), (2, problem), "{name:?}");
        }
    }

    #[test]
    fn damaged_rows_are_errors_naming_the_line() {
        let table: [(&[u8], usize, &str); 7] = [
            (b"no colon\r\n", 1, "no ':'"),
            (b"a: 1\r\n\r\n", 2, "no ':'"),
            (b"a:1\n\n", 2, "no ':'"),
            (b": v\r\n", 1, "an empty name"),
            (b"a: 1\r\nb: 2", 2, "no line end (a row cut short)"),
            (b"a: 1\r\nb: 2\r", 2, "no line end (a row cut short)"),
            (b"a: x\ry\r\n", 1, "a CR inside the line"),
        ];
        for (stored, line, problem) in table {
            let error = decode(stored).unwrap_err();
            assert_eq!(
                (error.line(), error.problem()),
                (line, problem),
                "{}",
                String::from_utf8_lossy(stored)
            );
            assert_eq!(
                error.to_string(),
                format!("stored headers, line {line}: {problem}")
            );
        }
    }
}
