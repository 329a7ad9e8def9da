//! An order and its payment request commit together, or not at all.
//!
//! Two business transactions on one SQLite file: each inserts an order and
//! enqueues its `POST /payments` intent in the same transaction. The first
//! commits, the second rolls back. A relay (the journal's resumer, in the
//! background, woken after the commit) sends what committed. The server — on
//! 127.0.0.1, started here — shows one payment: the committed order's, with its
//! key and body; the rolled-back order left nothing to send.
//!
//! Run: `cargo run -p reqwest-resilience-journal --example outbox`

use std::time::Duration;

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{IntentState, Journal, OutboxIntent, SqliteStore};

#[path = "support/payments_api.rs"]
mod payments_api;
use payments_api::PaymentsApi;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = PaymentsApi::start().await?;
    let dir = std::env::temp_dir().join(format!("outbox-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("shop.sqlite");

    // The store creates the journal's table; the shop's tables share the file.
    let journal = Journal::builder(SqliteStore::open(&path)?)
        .worker_name("shop-1")
        .build()?;
    let mut shop = rusqlite::Connection::open(&path)?;
    shop.busy_timeout(Duration::from_secs(5))?;
    shop.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, payment_key TEXT NOT NULL)")?;

    let client = ResilientClient::new();
    // The relay: woken by `wake_relays`, else it polls every 30 s.
    let relay = journal
        .resumer(&client)
        .resign(|request, _| request.bearer_auth("sk_test_example"))
        .spawn(Duration::from_secs(30));

    let paid = payment(&journal, &client, &server.url, 1842)?;
    order_with_payment(&mut shop, 1842, &paid, Commit::Yes)?;
    journal.wake_relays().await;
    let cancelled = payment(&journal, &client, &server.url, 1843)?;
    order_with_payment(&mut shop, 1843, &cancelled, Commit::No)?;

    tokio::time::timeout(Duration::from_secs(10), server.wait_for_payments(1)).await?;
    let totals = relay.stop().await;

    let orders: i64 = shop.query_row("SELECT COUNT(*) FROM orders", [], |r| r.get(0))?;
    let sent = journal
        .get(paid.key())
        .await?
        .ok_or("the committed intent")?;
    println!("orders committed: {orders}; relay sent {}", totals.claimed);
    println!(
        "order 1842: payment {} (status {:?}, {:?})",
        sent.state, sent.status, sent.locator
    );
    println!(
        "order 1843: rolled back; journaled: {}; payments with its key: {}",
        journal.get(cancelled.key()).await?.is_some(),
        server.payments_with_key(cancelled.key())
    );
    println!("payments at the server: {}", server.payments());

    let one_payment = server.payments() == 1
        && server.payments_with_key(paid.key()) == 1
        && server.payments_with_key(cancelled.key()) == 0
        && sent.state == IntentState::Succeeded
        && orders == 1;
    std::fs::remove_dir_all(&dir)?;
    if !one_payment {
        return Err("expected one payment, for the committed order only".into());
    }
    Ok(())
}

#[derive(PartialEq)]
enum Commit {
    Yes,
    No,
}

fn payment(
    journal: &Journal,
    client: &ResilientClient,
    url: &str,
    order: u32,
) -> Result<OutboxIntent, Box<dyn std::error::Error>> {
    Ok(journal.outbox(
        client
            .post(url)
            .bearer_auth("sk_test_example") // never journaled; the relay re-signs
            .header("content-type", "application/json")
            .body(format!(r#"{{"order":{order},"amount":500}}"#)),
    )?)
}

fn order_with_payment(
    shop: &mut rusqlite::Connection,
    order: u32,
    payment: &OutboxIntent,
    commit: Commit,
) -> Result<(), Box<dyn std::error::Error>> {
    let tx = shop.transaction()?;
    tx.execute(
        "INSERT INTO orders (id, payment_key) VALUES (?1, ?2)",
        rusqlite::params![order, payment.key()],
    )?;
    payment.enqueue_rusqlite(&tx)?;
    if commit == Commit::Yes {
        tx.commit()?;
    } else {
        tx.rollback()?;
    }
    Ok(())
}
