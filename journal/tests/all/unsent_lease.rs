//! Leases nobody sends under after a lost `COMMIT` answer: a write-ahead's (its
//! send went out with nothing sent), a resume claim's, a join's take-over's. Once
//! the database is back the intent is taken within seconds, not when the lease
//! (the deadline plus the lease margin, or the resume lease) would have lapsed.

use std::time::{Duration, Instant};

use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
use reqwest_resilience_journal::{DurableExt, Journal, PostgresStore};

use crate::support::backend::client;
use crate::support::server::Server;

const DEADLINE: Duration = Duration::from_secs(4);
/// Far longer than the test: only the ended lease lets the resumer in.
const SENDER_MARGIN: Duration = Duration::from_secs(120);
/// How soon after the database's return the intent must be sent.
const RESUMED_WITHIN: Duration = Duration::from_secs(10);

async fn admin(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .expect("admin connection");
    tokio::spawn(connection);
    client
}

/// Sets `synchronous_standby_names` to `names` and reloads the configuration.
async fn standby_required(admin: &tokio_postgres::Client, names: &str) {
    admin
        .batch_execute(&format!(
            "ALTER SYSTEM SET synchronous_standby_names = '{names}'"
        ))
        .await
        .expect("ALTER SYSTEM");
    admin
        .batch_execute("SELECT pg_reload_conf()")
        .await
        .expect("reload the configuration");
}

async fn journal(conninfo: &str, worker: &str, margin: Duration) -> Journal {
    let store = PostgresStore::builder(conninfo)
        .statement_timeout(Duration::from_secs(2))
        .connect()
        .await
        .expect("connect");
    Journal::builder(store)
        .worker_name(worker)
        .lease_margin(margin)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_commit_that_committed_is_resumed_soon_after_the_database_is_back() {
    let cluster = match ThrowawayPostgres::start(Durability::Defaults) {
        Ok(Some(cluster)) => cluster,
        Ok(None) => return crate::support::skip_postgres("no initdb/pg_ctl found"),
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    };
    // The test's own sessions and the resumer commit without the ghost.
    let local = format!(
        "{} options='-csynchronous_commit=local'",
        cluster.conninfo()
    );
    let resumer_journal = journal(&local, "resumer", Duration::from_millis(100)).await;
    let sender = journal(cluster.conninfo(), "sender", SENDER_MARGIN).await;
    let server = Server::start().await;
    let admin_session = admin(&local).await;
    // From now on every commit waits for a standby that does not exist: the
    // write-ahead's COMMIT is flushed locally and never answered. (Set in the
    // server's own configuration, so it can be dropped after the restart.)
    standby_required(&admin_session, "ghost").await;

    let key = "lost-commit-then-resumed";
    let sending = {
        let (sender, url) = (sender.clone(), server.url.clone());
        tokio::spawn(async move {
            client(1)
                .post(&url)
                .idempotency_key(key)
                .header("content-type", "application/json")
                .body(r#"{"amount":700,"currency":"EUR"}"#)
                .deadline(DEADLINE)
                .durable(&sender)
                .send()
                .await
        })
    };
    let waiting = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let waiters: i64 = admin_session
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
                    &[],
                )
                .await
                .map(|row| row.get(0))
                .unwrap_or(0);
            if waiters > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    waiting
        .await
        .expect("the write-ahead's commit waits for the standby");
    tokio::task::block_in_place(|| cluster.stop_immediate()).expect("pg_ctl stop -m immediate");
    let told = sending.await.unwrap();
    let error = told.expect_err("the send cannot have succeeded");
    assert!(error.is_outcome_unknown(), "{error}");
    assert!(server.seen_with_key(key).is_empty(), "nothing was sent");

    // The database comes back healthy (the standby requirement dropped).
    tokio::task::block_in_place(|| cluster.restart()).expect("pg_ctl start");
    let admin_session = admin(&local).await;
    standby_required(&admin_session, "").await;
    let back = Instant::now();
    let resumer = resumer_journal.resumer(&client(3));
    while server.effects_with_key(key) == 0 && back.elapsed() < RESUMED_WITHIN {
        let _ = resumer.run_once().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        server.effects_with_key(key),
        1,
        "resumed within {RESUMED_WITHIN:?} of the database's return, not at the end of \
         its {:?} lease",
        DEADLINE + SENDER_MARGIN
    );
}

/// A resume claim whose `COMMIT` answer was lost: the pass sends nothing it may
/// have claimed, and once the database answers the leases it took are ended,
/// so another worker takes the intent within seconds, not after the resume
/// lease (five minutes on the defaults).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_claim_whose_commit_answer_was_lost_holds_nothing_for_the_resume_lease() {
    use crate::support::proxy::{Cut, Proxy};

    let cluster = match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) => return crate::support::skip_postgres("no initdb/pg_ctl found"),
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    };
    let proxy = Proxy::start(cluster.port()).await;
    let cut_off = journal(&proxy.conninfo(), "cut-off", Duration::from_secs(30)).await;
    let other = journal(cluster.conninfo(), "other", Duration::from_secs(30)).await;
    let server = Server::start().await;

    // One intent due: enqueued and committed in a business transaction.
    let (mut business, connection) =
        tokio_postgres::connect(cluster.conninfo(), tokio_postgres::NoTls)
            .await
            .expect("business connection");
    tokio::spawn(connection);
    let intent = other
        .outbox(client(3).post(&server.url).body(r#"{"amount":5}"#))
        .unwrap();
    let tx = business.transaction().await.unwrap();
    intent.enqueue_tokio_postgres(&tx).await.unwrap();
    tx.commit().await.unwrap();

    // The cut-off worker's claim commits; its answer never arrives.
    proxy.arm(Cut::AfterCommit);
    let pass = cut_off.resumer(&client(3)).run_once().await;
    assert!(proxy.fired(), "the claim's COMMIT was cut");
    assert!(pass.is_err(), "the pass failed: {pass:?}");
    assert!(
        server.seen_with_key(intent.key()).is_empty(),
        "nothing was sent by the pass that lost its answer"
    );

    let started = Instant::now();
    let resumer = other.resumer(&client(3));
    while server.effects_with_key(intent.key()) == 0 && started.elapsed() < RESUMED_WITHIN {
        let _ = resumer.run_once().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        server.effects_with_key(intent.key()),
        1,
        "another worker sent it within {RESUMED_WITHIN:?}, not after the resume lease"
    );
}

/// A join whose take-over `COMMIT` answer was lost: the send that joined sends
/// nothing (its outcome unknown), and once the database answers the lease it
/// took is ended, so a resumer sends the intent within seconds, not after the
/// joiner's deadline plus its lease margin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_whose_take_over_commit_answer_was_lost_holds_nothing_for_its_lease() {
    use crate::support::proxy::{Cut, Proxy};
    use crate::support::server::Act;

    let cluster = match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) => return crate::support::skip_postgres("no initdb/pg_ctl found"),
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    };
    let proxy = Proxy::start(cluster.port()).await;
    let joiner = journal(&proxy.conninfo(), "joiner", SENDER_MARGIN).await;
    let first = journal(cluster.conninfo(), "first", Duration::from_secs(30)).await;
    // The first send meets a 503 and ends unknown; every later one is paid.
    let server = Server::scripted(
        |_, before| {
            if before == 0 {
                Act::Unavailable
            } else {
                Act::Normal
            }
        },
        None,
    )
    .await;
    let key = "joined-then-cut";
    let send = |journal: &Journal| {
        client(1)
            .post(&server.url)
            .idempotency_key(key)
            .body(r#"{"amount":9}"#)
            .deadline(DEADLINE)
            .durable(journal)
            .send()
    };
    let told = send(&first).await.expect_err("a 503 on its only attempt");
    assert!(told.is_outcome_unknown(), "{told}");

    // The caller sends it again through another journal: it joins the unknown
    // intent, and the take-over's COMMIT answer never arrives.
    proxy.arm(Cut::AfterCommit);
    let joined = send(&joiner)
        .await
        .expect_err("the join could not confirm its lease");
    assert!(proxy.fired(), "the take-over's COMMIT was cut");
    assert!(joined.is_outcome_unknown(), "{joined}");
    assert_eq!(server.seen_with_key(key).len(), 1, "the join sent nothing");

    let started = Instant::now();
    let resumer = first.resumer(&client(3));
    while server.effects_with_key(key) == 0 && started.elapsed() < RESUMED_WITHIN {
        let _ = resumer.run_once().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        server.effects_with_key(key),
        1,
        "resumed within {RESUMED_WITHIN:?}, not at the end of the joiner's {:?} lease",
        DEADLINE + SENDER_MARGIN
    );
}
