//! Situation 2, the lost response: the proxy loses the first answer after the
//! server sent it (the effect is made, the client never hears of it). The
//! client retries with the same key and must end with the result; one effect.

use std::sync::atomic::Ordering;

use reqwest_resilience::ResilientClient;

use crate::caller::send;
use crate::cell::{Ctx, Sent};
use crate::proxy::Proxy;
use crate::server::Server;
use crate::verdict::Expect;

pub async fn run(ctx: &mut Ctx, runs: u64) -> (Vec<Sent>, Option<Server>) {
    let server = Server::start(ctx.mode, &ctx.db, crate::cell::HANDLER).await;
    let proxy = Proxy::start(server.addr).await;
    let url = format!("http://{}/payments", proxy.addr);
    let mut sent = Vec::new();
    for run in 0..runs {
        let body = ctx.body(run);
        let lost_before = proxy.answers_lost.load(Ordering::SeqCst);
        proxy.lose_next_answers(1);
        let call = send("caller", &ResilientClient::new(), &url, None, &body, None).await;
        let unstaged = if proxy.answers_lost.load(Ordering::SeqCst) == lost_before {
            vec!["the proxy lost no answer".to_owned()]
        } else {
            vec![]
        };
        sent.push(Sent {
            body,
            expect: Expect::Once,
            calls: vec![call],
            journal: None,
            unstaged,
        });
    }
    (sent, Some(server))
}
