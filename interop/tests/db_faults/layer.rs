//! The layer mode under the faults: what tower-idempotency's plain layer on
//! `PostgresStore` answered while its database was away, as the clients
//! received it (counted by the server, `GET /statuses`). Its store failing is
//! a 503 with `Retry-After` the client waits out, never a 500 (whose body
//! would carry a driver's message); that no key was paid twice is the fleet's
//! own verdict, which covers the layer's keys too.

use std::collections::BTreeMap;

use crate::fleet::PaymentsServer;

/// Each status the layer server answered so far, and how often.
pub async fn statuses(server: &PaymentsServer) -> BTreeMap<String, u64> {
    let url = server.url.replace("/payments", "/statuses");
    let text = reqwest::get(&url)
        .await
        .expect("ask the layer server")
        .text()
        .await
        .expect("its statuses");
    text.lines()
        .filter_map(|line| {
            let (status, count) = line.split_once(' ')?;
            Some((status.to_owned(), count.parse().ok()?))
        })
        .collect()
}

/// Judges what the layer answered during one scenario (`after` less
/// `before`), panicking on a 500 or a 503 without `Retry-After`, and returns
/// its figures.
pub fn judge(name: &str, before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> String {
    let during: BTreeMap<&str, u64> = after
        .iter()
        .map(|(status, n)| {
            let was = before.get(status).copied().unwrap_or(0);
            (status.as_str(), n - was)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let figures = format!("{name}_layer: statuses={during:?}");
    let count = |status: &str| during.get(status).copied().unwrap_or(0);
    assert_eq!(count("500"), 0, "{figures}: the layer answered 500");
    assert_eq!(
        count("503-no-retry-after"),
        0,
        "{figures}: a 503 without Retry-After"
    );
    assert!(count("201") > 0, "{figures}: the layer paid nothing");
    figures
}
