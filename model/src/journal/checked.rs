//! The journal model as Stateright sees it: its initial state, its transitions
//! ([`super::model`]) and its properties ([`super::properties`]).

use stateright::{Model, Property};

use super::action::Action;
use super::model::JournalModel;
use super::properties;
use super::state::State;

impl Model for JournalModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial()]
    }

    /// Only the actions with a successor: Stateright's simulation rebuilds its
    /// paths by action index and must see the same list the walk chose from.
    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        self.enabled(s, actions);
        actions.retain(|&action| self.successor(s, action).is_some());
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        self.successor(last, action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
    }
}
