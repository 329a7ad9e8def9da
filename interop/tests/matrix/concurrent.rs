//! Situation 1, the concurrent duplicate: two callers (two clients, as two
//! processes would be) send the same intent — one key, one body — 100 ms apart
//! while the handler takes 2 s. Both must end with the result, one executed and
//! one replayed, the second within 4 s of its start.

use std::time::Duration;

use reqwest_resilience::ResilientClient;

use crate::caller::send;
use crate::cell::{Ctx, Sent};
use crate::server::Server;
use crate::verdict::Expect;

const SECOND_AFTER: Duration = Duration::from_millis(100);
const SECOND_WITHIN: Duration = Duration::from_secs(4);

pub async fn run(ctx: &mut Ctx, runs: u64) -> (Vec<Sent>, Option<Server>) {
    let server = Server::start(ctx.mode, &ctx.db, crate::cell::HANDLER).await;
    let url = format!("http://{}/payments", server.addr);
    let mut sent = Vec::new();
    for run in 0..runs {
        let body = ctx.body(run);
        // The callers share one intent: its key is theirs, not the client's.
        let key = format!("{}-run-{run}", ctx.label);
        // One task polls both, so the first is on its way before the second
        // waits out its 100 ms (a spawned task could start late on a busy machine).
        let (one, two) = (ResilientClient::new(), ResilientClient::new());
        let (first, second) =
            tokio::join!(send("first", &one, &url, Some(&key), &body, None), async {
                tokio::time::sleep(SECOND_AFTER).await;
                send("second", &two, &url, Some(&key), &body, Some(SECOND_WITHIN)).await
            });
        sent.push(Sent {
            body,
            expect: Expect::Once,
            calls: vec![first, second],
            journal: None,
            unstaged: vec![],
        });
    }
    (sent, Some(server))
}
