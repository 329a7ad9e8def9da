//! P12's relay in a process of its own: the journal's resumer on a PostgreSQL
//! journal, sending what producers in another process commit. The benchmark
//! (`bench --only p12`) starts it; run by hand:
//!
//! ```text
//! p12_relay 'host=127.0.0.1 port=5432 user=postgres dbname=postgres' POLL_MS BATCH
//! ```
//!
//! Prints `READY` once its relay runs; when its standard input ends (the
//! benchmark closes it, or dies) it stops the relay after the pass in progress
//! and prints `TOTALS claimed=… succeeded=… failed=… unknown=… abandoned=…`.
//! It only sends where the intents point (the benchmark's server on 127.0.0.1).

use std::io::{Read as _, Write as _};
use std::time::Duration;

use reqwest_resilience::{ResilientClient, RetryPolicy};
use reqwest_resilience_bench::peers::bare_reqwest_builder;
use reqwest_resilience_journal::{Journal, PostgresStore};

/// What the command line says.
struct Args {
    conninfo: String,
    poll: Duration,
    batch: usize,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let usage = "usage: p12_relay CONNINFO POLL_MS BATCH";
    let conninfo = args.next().ok_or(usage)?;
    let poll_ms: u64 = args.next().and_then(|v| v.parse().ok()).ok_or(usage)?;
    let batch: usize = args
        .next()
        .and_then(|v| v.parse().ok())
        .filter(|&b| b > 0)
        .ok_or(usage)?;
    if poll_ms == 0 || args.next().is_some() {
        return Err(usage.into());
    }
    Ok(Args {
        conninfo,
        poll: Duration::from_millis(poll_ms),
        batch,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    // A connection per intent of a batch: its sends record their results at once.
    let store = PostgresStore::builder(&args.conninfo)
        .pool_size(args.batch)
        .connect()
        .await
        .unwrap_or_else(|error| panic!("p12_relay: PostgreSQL journal: {error}"));
    let journal = Journal::builder(store)
        .worker_name("p12-relay")
        .build()
        .expect("journal");
    let client = ResilientClient::from_builder(bare_reqwest_builder(), RetryPolicy::default())
        .expect("client");
    let relay = journal
        .resumer(&client)
        .resign(|request, _intent| request.bearer_auth("p12"))
        .batch(args.batch)
        .spawn(args.poll);
    println!("READY");
    let _ = std::io::stdout().flush();

    // Until the benchmark closes standard input (or dies, which closes it too).
    let _ = tokio::task::spawn_blocking(|| {
        let mut rest = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut rest);
    })
    .await;
    let totals = relay.stop().await;
    println!(
        "TOTALS claimed={} succeeded={} failed={} unknown={} abandoned={}",
        totals.claimed, totals.succeeded, totals.failed, totals.unknown, totals.abandoned
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, String> {
        parse_args(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn reads_the_connection_the_poll_and_the_batch() {
        let args = parse("host=db 1000 32").expect("parses");
        assert_eq!(args.conninfo, "host=db");
        assert_eq!(args.poll, Duration::from_secs(1));
        assert_eq!(args.batch, 32);
    }

    #[test]
    fn refuses_a_zero_a_word_or_a_missing_or_extra_argument() {
        for line in [
            "",
            "host=db",
            "host=db 1000",
            "host=db 0 32",
            "host=db 1000 0",
            "host=db soon 32",
            "host=db 1000 32 extra",
        ] {
            assert!(parse(line).is_err(), "{line:?} accepted");
        }
    }
}
