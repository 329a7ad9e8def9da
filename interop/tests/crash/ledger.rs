//! The server's own record of what it did: the `payments` rows, read from its
//! SQLite file after the run.

use std::collections::BTreeMap;
use std::path::Path;

use tower_idempotency::rusqlite::Connection;

/// Payment row ids by amount. Each intent pays a distinct amount, so an amount
/// with two ids is a double effect.
pub fn payments_by_amount(db: &Path) -> BTreeMap<i64, Vec<i64>> {
    let conn = Connection::open(db).expect("open the server's database");
    let mut statement = conn
        .prepare("SELECT id, amount FROM payments ORDER BY id")
        .expect("the payments table");
    let rows = statement
        .query_map([], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)))
        .expect("read payments");
    let mut by_amount: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for row in rows {
        let (id, amount) = row.expect("a payment row");
        by_amount.entry(amount).or_default().push(id);
    }
    by_amount
}

/// The body the server answers (and replays) for payment `id` of `amount`.
pub fn payment_body(id: i64, amount: i64) -> String {
    format!("{{\"payment\":{id},\"amount\":{amount}}}")
}
