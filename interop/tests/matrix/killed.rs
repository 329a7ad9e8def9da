//! Situation 3, the server killed mid-handler: the request goes out through a
//! proxy with a stable address; about 0.5 s into the 2 s handler the server is
//! SIGKILLed and restarted on the same database, and the proxy sends the
//! client's retries to the new process. The client must end with the result and
//! the database hold one effect — except behind the memory layer, whose
//! documented boundary is that an effect outside its store is repeated: the
//! first process made the effect and its keys died with it, so the retry runs
//! the handler again. That cell expects exactly two effects, and says so.

use reqwest_resilience::ResilientClient;

use crate::caller::send;
use crate::cell::{Ctx, Sent, HANDLER};
use crate::proxy::Proxy;
use crate::server::{Mode, Server};
use crate::verdict::Expect;

/// The memory layer's documented boundary: the killed process's effect, and
/// the retry's.
const MEMORY_LAYER_EFFECTS: usize = 2;

pub async fn run(ctx: &mut Ctx, runs: u64) -> (Vec<Sent>, Option<Server>) {
    let mut server = Server::start(ctx.mode, &ctx.db, HANDLER).await;
    let proxy = Proxy::start(server.addr).await;
    let url = format!("http://{}/payments", proxy.addr);
    let expect = match ctx.mode {
        Mode::Memory => Expect::Boundary(MEMORY_LAYER_EFFECTS),
        Mode::Sqlite | Mode::Postgres => Expect::Once,
    };
    let mut sent = Vec::new();
    for run in 0..runs {
        let body = ctx.body(run);
        let kill_after = ctx.kill_after();
        let caller = {
            let (url, body) = (url.clone(), body.clone());
            tokio::spawn(async move {
                send("caller", &ResilientClient::new(), &url, None, &body, None).await
            })
        };
        tokio::time::sleep(kill_after).await;
        let mut unstaged = vec![];
        if caller.is_finished() {
            unstaged.push(format!("the call ended before the kill at {kill_after:?}"));
        }
        server.kill().await;
        server = Server::start(ctx.mode, &ctx.db, HANDLER).await;
        proxy.set_upstream(server.addr);
        let call = caller.await.expect("the caller's task");
        sent.push(Sent {
            body,
            expect,
            calls: vec![call],
            journal: None,
            unstaged,
        });
    }
    (sent, Some(server))
}
