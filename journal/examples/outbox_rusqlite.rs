//! Result delivery with rusqlite: "mark the order paid" exactly once, even across a
//! crash.
//!
//! An order and its payment intent commit in one transaction on the shop's SQLite
//! file (the journal's tables share it). A relay sends the payment; its result is
//! applied to the order **in the application's own transaction**, which also
//! acknowledges it in the journal (`acknowledge_rusqlite`): the update happens
//! exactly when the acknowledgement commits.
//!
//! 1. A first process sends order 1842's payment and dies before updating the
//!    order (its result hook never ran): the result stays unacknowledged.
//! 2. The restarted process catches up at start-up (`unacknowledged`), marks order
//!    1842 paid and acknowledges it, in one transaction.
//! 3. Its relay's result hook applies order 1843's payment as it arrives; order
//!    1844 rolls back and sends nothing. A second catch-up finds nothing left.
//!
//! Run: `cargo run -p reqwest-resilience-journal --example outbox_rusqlite`

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{IntentState, Journal, OutboxIntent, SqliteStore};
use rusqlite::{params, Connection};

#[path = "support/payments_api.rs"]
mod payments_api;
use payments_api::PaymentsApi;

type Error = Box<dyn std::error::Error>;

/// Applies one payment result to its order, exactly once: the update runs only when
/// this transaction is the one that acknowledges the result, and both commit (or
/// roll back) together.
fn apply(
    journal: &Journal,
    shop: &mut Connection,
    key: &str,
    state: IntentState,
) -> Result<bool, Error> {
    let tx = shop.transaction()?;
    let first = journal.acknowledge_rusqlite(&tx, key)?;
    if first {
        tx.execute(
            "UPDATE orders SET paid = ?2, updates = updates + 1 WHERE payment_key = ?1",
            params![key, state == IntentState::Succeeded],
        )?;
    }
    tx.commit()?;
    Ok(first)
}

/// The start-up catch-up: every result whose update a crash (or a failed hook) lost,
/// oldest first, a bounded page at a time.
async fn catch_up(journal: &Journal, shop: &mut Connection) -> Result<usize, Error> {
    let mut applied = 0;
    // Bounded: each page is acknowledged before the next is read.
    for _ in 0..1000 {
        let page = journal.unacknowledged(100).await?;
        if page.is_empty() {
            return Ok(applied);
        }
        for result in &page {
            if apply(journal, shop, &result.key, result.state)? {
                applied += 1;
            }
        }
    }
    Err("the catch-up did not finish".into())
}

fn order_with_payment(
    shop: &mut Connection,
    order: u32,
    payment: &OutboxIntent,
    commit: bool,
) -> Result<(), Error> {
    let tx = shop.transaction()?;
    tx.execute(
        "INSERT INTO orders (id, payment_key) VALUES (?1, ?2)",
        params![order, payment.key()],
    )?;
    payment.enqueue_rusqlite(&tx)?;
    if commit {
        tx.commit()?;
    } else {
        tx.rollback()?;
    }
    Ok(())
}

fn payment(
    journal: &Journal,
    client: &ResilientClient,
    url: &str,
    order: u32,
) -> Result<OutboxIntent, Error> {
    Ok(journal.outbox(
        client
            .post(url)
            .header("content-type", "application/json")
            .body(format!(r#"{{"order":{order},"amount":500}}"#)),
    )?)
}

/// (paid, updates) of `order`; `paid` is NULL until a result is applied.
fn order_state(shop: &Connection, order: u32) -> Result<(Option<bool>, i64), Error> {
    Ok(shop.query_row(
        "SELECT paid, updates FROM orders WHERE id = ?1",
        [order],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?)
}

fn open_shop(path: &std::path::Path) -> Result<Connection, Error> {
    let shop = Connection::open(path)?;
    shop.busy_timeout(Duration::from_secs(5))?;
    Ok(shop)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = PaymentsApi::start().await?;
    let dir = std::env::temp_dir().join(format!("outbox-rusqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("shop.sqlite");
    let client = ResilientClient::new();
    let signed =
        |request: reqwest_resilience::RequestBuilder, _: &_| request.bearer_auth("sk_test_example");

    // 1. The first process: the order commits with its payment, a relay sends it,
    //    and the process dies before the order is updated (no result hook ran).
    {
        let journal = Journal::builder(SqliteStore::open(&path)?)
            .worker_name("shop-1")
            .build()?;
        let mut shop = open_shop(&path)?;
        shop.execute_batch(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, payment_key TEXT NOT NULL, \
             paid BOOLEAN, updates INTEGER NOT NULL DEFAULT 0)",
        )?;
        let paid = payment(&journal, &client, &server.url, 1842)?;
        order_with_payment(&mut shop, 1842, &paid, true)?;
        let relay = journal
            .resumer(&client)
            .resign(signed)
            .spawn(Duration::from_secs(30));
        journal.wake_relays().await;
        tokio::time::timeout(Duration::from_secs(10), server.wait_for_payments(1)).await?;
        relay.stop().await;
        println!(
            "process 1: payment for order 1842 sent; died before updating the order: {:?}",
            order_state(&shop, 1842)?
        );
    }

    // 2. The restarted process: the start-up catch-up applies what the crash lost.
    let journal = Journal::builder(SqliteStore::open(&path)?)
        .worker_name("shop-1")
        .build()?;
    let mut shop = open_shop(&path)?;
    let caught_up = catch_up(&journal, &mut shop).await?;
    println!(
        "process 2: start-up catch-up applied {caught_up} result(s); order 1842: {:?}",
        order_state(&shop, 1842)?
    );

    // 3. The fast path: the relay's hook applies each result as it is written, on a
    //    blocking thread (rusqlite waits on the file's lock).
    let hook_shop = Arc::new(Mutex::new(open_shop(&path)?));
    let hook_journal = journal.clone();
    let relay = journal
        .resumer(&client)
        .resign(signed)
        .on_result(move |result| {
            if result.error.is_some() || !result.outcome.state().is_terminal() {
                return; // not written, or not a result yet: the catch-up will see it
            }
            let (journal, shop) = (hook_journal.clone(), Arc::clone(&hook_shop));
            let (key, state) = (result.record.key.clone(), result.outcome.state());
            tokio::task::spawn_blocking(move || {
                let mut shop = shop.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(error) = apply(&journal, &mut shop, &key, state) {
                    eprintln!("order not updated yet, the next catch-up will: {error}");
                }
            });
        })
        .spawn(Duration::from_secs(30));
    let paid = payment(&journal, &client, &server.url, 1843)?;
    order_with_payment(&mut shop, 1843, &paid, true)?;
    let cancelled = payment(&journal, &client, &server.url, 1844)?;
    order_with_payment(&mut shop, 1844, &cancelled, false)?;
    journal.wake_relays().await;
    let started = Instant::now();
    while order_state(&shop, 1843)?.0.is_none() && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    relay.stop().await;
    println!(
        "process 2: order 1843 updated by the result hook: {:?}",
        order_state(&shop, 1843)?
    );
    let left = catch_up(&journal, &mut shop).await?;
    println!(
        "process 2: a second catch-up applied {left}; payments at the server: {}",
        server.payments()
    );

    let orders: i64 = shop.query_row("SELECT COUNT(*) FROM orders", [], |r| r.get(0))?;
    let exactly_once = order_state(&shop, 1842)? == (Some(true), 1)
        && order_state(&shop, 1843)? == (Some(true), 1)
        && orders == 2
        && left == 0
        && journal.unacknowledged(10).await?.is_empty()
        && server.payments() == 2
        && server.payments_with_key(cancelled.key()) == 0;
    std::fs::remove_dir_all(&dir)?;
    if !exactly_once {
        return Err(
            "expected each committed order paid once, and the rolled-back one never sent".into(),
        );
    }
    println!("each committed order paid exactly once; the rolled-back order sent nothing");
    Ok(())
}
