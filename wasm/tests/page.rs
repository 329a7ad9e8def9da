//! The source story, in headless Chromium: the payment page (`src/lib.rs`) mounted in
//! the test's document, its Pay button pressed as an operator would, and the server
//! asked how many payments it made.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

mod support;

use std::time::Duration;

use reqwest_resilience_wasm::mount;
use support::{log_with, pause, Scenario};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};
use web_sys::{Element, HtmlElement};

wasm_bindgen_test_configure!(run_in_browser);

/// The form, mounted in a fresh element of the test's page.
struct Page {
    root: Element,
}

impl Page {
    fn open(endpoint: &str) -> Self {
        let document = web_sys::window().unwrap().document().unwrap();
        let root = document.create_element("section").unwrap();
        document.body().unwrap().append_child(&root).unwrap();
        mount(&root, endpoint).unwrap();
        Self { root }
    }

    fn press_pay(&self) {
        let button = self
            .root
            .query_selector("button[name=pay]")
            .unwrap()
            .unwrap();
        button.dyn_into::<HtmlElement>().unwrap().click();
    }

    fn status(&self) -> Element {
        self.root.query_selector("[role=status]").unwrap().unwrap()
    }

    fn state(&self) -> String {
        self.status()
            .get_attribute("data-state")
            .unwrap_or_default()
    }

    fn finished(&self) -> u32 {
        let finished = self.status().get_attribute("data-finished");
        finished.and_then(|n| n.parse().ok()).unwrap_or(0)
    }

    /// Waits (at most 10 s) until `presses` presses have ended; returns the state.
    async fn settled(&self, presses: u32) -> String {
        for _ in 0..200 {
            if self.finished() >= presses {
                return self.state();
            }
            pause(Duration::from_millis(50)).await;
        }
        panic!(
            "{} of {presses} presses ended in 10 s; the page says {:?}",
            self.finished(),
            self.status().text_content()
        );
    }
}

#[wasm_bindgen_test]
async fn pressing_pay_twice_pays_once() {
    let scenario = Scenario::new("page-twice");
    let page = Page::open(&scenario.url("slow/300"));
    page.press_pay();
    page.press_pay();
    assert_eq!(page.settled(2).await, "paid");

    let log = log_with(&scenario, 1).await;
    assert_eq!(log.effects(), 1, "statuses {:?}", log.statuses());
    // Both presses carried the key the form made when it opened.
    log.one_key();
    assert!(log.statuses().len() >= 2);
}

#[wasm_bindgen_test]
async fn pressing_pay_again_after_no_answer_in_time_pays_once() {
    // The handler takes 1.5 s: the first press's attempt is cut off after 1 s, its
    // retry is told the payment is still running, and waiting would pass the form's
    // 2 s: "no answer in time". The operator presses again.
    let scenario = Scenario::new("page-again");
    let page = Page::open(&scenario.url("slow/1500"));
    page.press_pay();
    assert_eq!(page.settled(1).await, "unknown");
    assert_eq!(
        page.status().text_content().unwrap(),
        "No answer in time. Press Pay again: it will not pay twice."
    );
    page.press_pay();
    assert_eq!(page.settled(2).await, "paid");

    let log = log_with(&scenario, 1).await;
    assert_eq!(log.effects(), 1, "statuses {:?}", log.statuses());
    log.one_key();
    assert!(log.statuses().contains(&409), "{:?}", log.statuses());
}

#[wasm_bindgen_test]
async fn after_a_payment_the_next_press_is_a_new_intent() {
    let scenario = Scenario::new("page-next");
    let page = Page::open(&scenario.url("slow/10"));
    page.press_pay();
    assert_eq!(page.settled(1).await, "paid");
    page.press_pay();
    assert_eq!(page.settled(2).await, "paid");

    let log = scenario.log().await;
    assert_eq!(log.effects(), 2);
    let keys = log.keys();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
}
