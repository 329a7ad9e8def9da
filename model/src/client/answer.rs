//! What an attempt may meet — the server's answer or the transport's outcome — and
//! how the crate's own classifier reads it.

use super::rules::{self as model_rules, Failure, Verdict};

use super::intent::IntentKind;

/// The server's answer to one attempt, or what the transport did with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// A response with this status, and `Retry-After: <seconds>` if given.
    Status(u16, Option<u8>),
    /// The connection could not be established: the request never left.
    ConnectFailed,
    /// The connection was lost after the request was written: it may have been
    /// processed.
    ConnectionLost,
    /// The attempt's timeout fired (not chosen: the timer's own event).
    TimedOut,
}

impl Answer {
    /// The transport failure this is, if no response arrived.
    pub fn failure(self) -> Option<Failure> {
        match self {
            Answer::Status(..) => None,
            Answer::ConnectFailed => Some(Failure::Connect),
            Answer::ConnectionLost => Some(Failure::ConnectionLost),
            Answer::TimedOut => Some(Failure::Timeout),
        }
    }

    /// The crate's classification of this answer for an intent of `kind`.
    pub fn classify(self, kind: IntentKind) -> Verdict {
        let method = kind.method();
        match (self, self.failure()) {
            (Answer::Status(status, retry_after), _) => model_rules::classify_response(
                &method,
                kind.keyed,
                status,
                retry_after.map(u64::from),
            ),
            (_, Some(failure)) => model_rules::classify_failure(&method, kind.keyed, failure),
            (_, None) => unreachable!("only a status has no failure"),
        }
    }

    /// Proves that the server did not process the request (a POST without a key
    /// may go again only after such an answer): a failure that never left, or a
    /// `425 Too Early` (RFC 8470).
    pub fn proves_unprocessed(self) -> bool {
        match (self, self.failure()) {
            (Answer::Status(status, _), _) => status == 425,
            (_, Some(failure)) => failure.proves_not_sent(),
            (_, None) => false,
        }
    }

    /// A response (as opposed to a transport failure).
    pub fn is_response(self) -> bool {
        matches!(self, Answer::Status(..))
    }

    /// The `Retry-After` the server sent, in seconds.
    pub fn retry_after(self) -> Option<u8> {
        match self {
            Answer::Status(_, retry_after) => retry_after,
            _ => None,
        }
    }
}
