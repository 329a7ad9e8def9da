//! The source story as a page: a payment form whose submit button may be pressed
//! twice, or again after a timeout, and still pays once.
//!
//! The operator's form of the story waited two seconds, showed a timeout, the
//! operator pressed the button again, and two payments were made. Here the form makes
//! its idempotency key **when it opens**, and every press sends the same intent with
//! that key until a payment is confirmed: a second press while the first is on its way,
//! or a press after "no answer in time", is the same payment to the server (behind
//! tower-idempotency it waits for the first one or replays its result). Only a
//! confirmed payment opens a new intent, with a new key.
//!
//! `mount` builds the form into any element; `index.html` beside this crate shows it
//! in a page, and `tests/page.rs` presses its button in headless Chromium.
//!
//! The form's state is written on the status line's `data-state` (`ready`, `sending`,
//! `paid`, `unknown`, `failed`) and `data-finished` (how many presses have ended), so
//! that a test, or a style sheet, can read it.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#![deny(missing_docs)]

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use reqwest_resilience::{IdempotencyKey, ResilientClient, RetryPolicy};
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, HtmlElement, HtmlInputElement};

/// How long the form waits for one press: the story's two seconds.
pub const FORM_DEADLINE: Duration = Duration::from_secs(2);

/// How long one attempt may take before it is cut off and retried with the same key.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);

/// One open form: the intent it stands for and where it says what happened.
struct Form {
    client: ResilientClient,
    endpoint: String,
    /// The intent's key: made when the form opened, kept until a payment is confirmed.
    key: RefCell<IdempotencyKey>,
    amount: HtmlInputElement,
    status: HtmlElement,
    finished: RefCell<u32>,
}

impl Form {
    fn show(&self, state: &str, text: &str) {
        let _ = self.status.set_attribute("data-state", state);
        self.status.set_text_content(Some(text));
    }

    /// One press of the button: the form's intent, sent with its key.
    async fn submit(self: Rc<Self>) {
        self.show("sending", "Paying…");
        let key = self.key.borrow().as_str().to_owned();
        let result = self
            .client
            .post(&self.endpoint)
            .header("content-type", "text/plain")
            .idempotency_key(key)
            .body(self.amount.value())
            .send()
            .await;
        match result {
            Ok(response) if response.status().is_success() => {
                let receipt = response.text().await.unwrap_or_default();
                // Confirmed: the next payment is another intent.
                *self.key.borrow_mut() = IdempotencyKey::generate();
                self.show("paid", &format!("Paid ({receipt})."));
            }
            Ok(response) => {
                self.show("failed", &format!("Refused: {}.", response.status()));
            }
            Err(error) if error.is_outcome_unknown() => {
                // The story's moment: no answer in time. Pressing again is safe, since
                // the next press carries the same key.
                self.show(
                    "unknown",
                    "No answer in time. Press Pay again: it will not pay twice.",
                );
            }
            Err(error) => self.show("failed", &format!("Not paid: {error}.")),
        }
        *self.finished.borrow_mut() += 1;
        let finished = self.finished.borrow().to_string();
        let _ = self.status.set_attribute("data-finished", &finished);
    }
}

fn element<T: JsCast>(document: &Document, tag: &str) -> Result<T, JsValue> {
    document
        .create_element(tag)?
        .dyn_into::<T>()
        .map_err(|_| JsValue::from_str(&format!("<{tag}> is not the element expected")))
}

/// Builds the payment form into `parent`: an amount, a Pay button and a status line,
/// sending to `endpoint` (a URL that takes a POST with an `Idempotency-Key`).
///
/// # Errors
/// When the page has no document, or an element cannot be made.
#[wasm_bindgen]
pub fn mount(parent: &Element, endpoint: &str) -> Result<(), JsValue> {
    let document = parent
        .owner_document()
        .ok_or_else(|| JsValue::from_str("the element is in no document"))?;
    let policy = RetryPolicy::builder()
        .deadline(FORM_DEADLINE)
        .attempt_timeout(ATTEMPT_TIMEOUT)
        .build()
        .map_err(|error| JsValue::from_str(&error.to_string()))?;
    let amount: HtmlInputElement = element(&document, "input")?;
    amount.set_name("amount");
    amount.set_value("1500");
    let button: HtmlElement = element(&document, "button")?;
    button.set_text_content(Some("Pay"));
    button.set_attribute("type", "button")?;
    button.set_attribute("name", "pay")?;
    let status: HtmlElement = element(&document, "p")?;
    status.set_attribute("role", "status")?;
    let form = Rc::new(Form {
        client: ResilientClient::with_policy(policy),
        endpoint: endpoint.to_owned(),
        key: RefCell::new(IdempotencyKey::generate()),
        amount,
        status,
        finished: RefCell::new(0),
    });
    form.show("ready", "");
    let _ = form.status.set_attribute("data-finished", "0");
    let pressed = Rc::clone(&form);
    let on_click = Closure::<dyn FnMut()>::new(move || {
        wasm_bindgen_futures::spawn_local(Rc::clone(&pressed).submit());
    });
    button.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref())?;
    // The listener lives as long as the page: the form is never unmounted.
    on_click.forget();
    parent.append_child(&form.amount)?;
    parent.append_child(&button)?;
    parent.append_child(&form.status)?;
    Ok(())
}
