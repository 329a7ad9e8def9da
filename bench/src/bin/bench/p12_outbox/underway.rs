//! P12's peer: underway 0.2.0's transactional enqueue, its schema made by its
//! own migrations (`bench/peers/underway-0.2.0`, unchanged) on the same
//! PostgreSQL, and its enqueue statement — `Queue::enqueue`'s `insert into
//! underway.task …` with a task's default settings (15 min timeout, 30 s
//! heartbeat, 14 days' retention, no delay, 5 attempts from 1 s to 60 s by 2,
//! no concurrency key, priority 0) and its `pg_notify` trigger — prepared once
//! per connection, as sqlx caches it. Why the SQL and not the crate: see the
//! README beside the migrations.

/// Its migrations, in order. Each runs in a transaction of its own (they `set
/// local search_path`), as sqlx's migrator runs them.
const MIGRATIONS: [&str; 6] = [
    include_str!("../../../../peers/underway-0.2.0/20240921151751_0.sql"),
    include_str!("../../../../peers/underway-0.2.0/20241024174106_1.sql"),
    include_str!("../../../../peers/underway-0.2.0/20241105164503_2.sql"),
    include_str!("../../../../peers/underway-0.2.0/20241110164319_3.sql"),
    include_str!("../../../../peers/underway-0.2.0/20241111174958_4.sql"),
    include_str!("../../../../peers/underway-0.2.0/20241126224448_5.sql"),
];

/// sqlx's migrations table, which underway's first migration copies.
const SQLX_MIGRATIONS: &str = "CREATE TABLE IF NOT EXISTS public._sqlx_migrations (
    version BIGINT PRIMARY KEY, description TEXT NOT NULL,
    installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL,
    checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)";

/// The queue the peer's tasks go to (`Queue::builder().name(QUEUE).build()`
/// inserts it).
const QUEUE: &str = "p12";

/// `$1` the task's id (a UUID as text), `$2` its input (JSON as text).
pub const ENQUEUE: &str = "insert into underway.task (id, task_queue_name, input, timeout,
        heartbeat, ttl, delay, retry_policy, concurrency_key, priority)
    values ($1::text::uuid, 'p12', $2::text::jsonb, interval '15 minutes',
        interval '30 seconds', interval '14 days', interval '0 seconds',
        row(5, 1000, 60000, 2.0)::underway.task_retry_policy, null, 0)";

/// Removes the peer's tasks between figures.
pub const CLEAN: &str = "TRUNCATE underway.task CASCADE";

/// Makes underway's schema and queue on `client`'s database.
pub async fn install(client: &tokio_postgres::Client) {
    client
        .batch_execute(SQLX_MIGRATIONS)
        .await
        .expect("P12 peer: sqlx's migrations table");
    for migration in MIGRATIONS {
        client
            .batch_execute(&format!("BEGIN; {migration}; COMMIT"))
            .await
            .unwrap_or_else(|error| panic!("P12 peer: underway's migration: {error}"));
    }
    client
        .execute(
            "insert into underway.task_queue (name) values ($1)",
            &[&QUEUE],
        )
        .await
        .expect("P12 peer: underway's queue");
}
