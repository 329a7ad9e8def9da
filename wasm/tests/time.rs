//! The crate's clock and sleeper on the JavaScript host (node and headless Chromium):
//! std's clock panics on wasm32-unknown-unknown, so these are the host's
//! `performance.now()`, `Date.now()` and `setTimeout`.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

use std::time::Duration;

use reqwest_resilience::time::{Clock, JsTimerSleeper, Sleeper, SystemClock, SystemTime};
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
async fn a_pause_never_ends_before_it_was_asked_to() {
    let clock = SystemClock;
    // Node's timers keep their loop time in whole milliseconds and have been seen
    // firing a fraction of one early against `performance.now()`: many short pauses,
    // none a whole number of milliseconds, give that every chance to show.
    let short = std::iter::repeat_n(Duration::from_micros(2_300), 20);
    let asked_in_turn = [
        Duration::ZERO,
        Duration::from_micros(1_500),
        Duration::from_millis(30),
    ];
    for asked in asked_in_turn.into_iter().chain(short) {
        let start = clock.now();
        JsTimerSleeper.sleep(asked).await;
        let took = clock.now() - start;
        assert!(took >= asked, "asked {asked:?}, took {took:?}");
        assert!(
            took < asked + Duration::from_secs(1),
            "asked {asked:?}, took {took:?}"
        );
    }
}

#[wasm_bindgen_test]
fn the_wall_clock_is_the_hosts() {
    let since_epoch = SystemClock
        .wall_now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after 1970");
    // Any date after this crate was written, and before the year 2100.
    assert!(
        since_epoch > Duration::from_secs(1_700_000_000),
        "{since_epoch:?}"
    );
    assert!(
        since_epoch < Duration::from_secs(4_102_444_800),
        "{since_epoch:?}"
    );
}
