//! Ranks driven by a real application (`ringside torchrun`): its calls reach the engine one by
//! one, and virtual time advances only while the application holds still.
//!
//! The engine asks its [`Application`] to sync before it moves on to a later time whenever a
//! call of the application ended since the last sync, or when nothing is left in the queue.
//! The application hands back the calls its ranks made since (each stamped with a time no
//! earlier than the engine's, and queued after every event of the engine's current time), and
//! returns only once none of its ranks runs its own code: so the engine never runs past a time
//! a rank could still issue a call at, and what the engine is handed depends on no wall clock.

use super::{Engine, Ev};
use crate::proto::{AppDone, Input};
use crate::trace::Recorder;
use crate::units::Nanos;

/// What drives application-driven ranks (see the module doc).
pub trait Application {
    /// The engine is at `now`; `done` holds every call that ended since the last sync, as
    /// (rank, when, how). Returns the inputs to hand to ranks, each (rank, at, input) with
    /// `at >= now`, in the order they are to be queued. Blocks while any rank runs its own code.
    fn sync(&mut self, now: Nanos, done: Vec<(u32, Nanos, AppDone)>) -> Vec<(u32, Nanos, Input)>;

    /// `rank`'s process died at `now` (a fault): the application's must too.
    fn killed(&mut self, rank: u32, now: Nanos);

    /// Whether the application failed by itself: a process of it ended with an error (asked
    /// once the run is over; such a run did not complete).
    fn failed(&self) -> bool {
        false
    }
}

/// The engine's side of an application.
pub(super) struct AppLink<'r> {
    pub app: &'r mut dyn Application,
    /// Calls that ended since the last sync.
    pub done: Vec<(u32, Nanos, AppDone)>,
    /// A sync is due before the next event.
    pub due: bool,
}

impl<'r, R: Recorder + ?Sized> Engine<'r, R> {
    /// Lets `app` drive the ranks (the scenario must have `[torch]`).
    pub fn drive_by(&mut self, app: &'r mut dyn Application) {
        self.app = Some(AppLink {
            app,
            done: Vec::new(),
            due: true,
        });
    }

    /// Syncs with the application when it is due (see the module doc): not before every event
    /// of the current time is processed, so that the calls ending at one time release their
    /// ranks together, which then run side by side.
    pub(super) fn sync_app(&mut self) {
        let more_now = self.queue.due_at(self.now);
        let Some(link) = self.app.as_mut() else {
            return;
        };
        if self.queue.len() > 0 && (!link.due || more_now) {
            return;
        }
        link.due = false;
        let done = std::mem::take(&mut link.done);
        let inputs = link.app.sync(self.now, done);
        for (rank, at, input) in inputs {
            self.push(
                at.max(self.now),
                Ev::App {
                    rank,
                    input: Box::new(input),
                },
            );
        }
    }

    /// Hands `input` from the application to `rank`.
    pub(super) fn app_input(&mut self, rank: u32, input: Box<Input>) {
        let slot = &mut self.slots[rank as usize];
        if slot.proc.is_none() {
            return;
        }
        if slot.paused {
            slot.parked.push(Ev::App { rank, input });
            return;
        }
        let call = matches!(&*input, Input::Call(_));
        match &*input {
            Input::Group(g) => self.observer.add_group(g.id, g.members.clone()),
            Input::Call(c) => self.observer.app_input(rank, c),
            _ => {}
        }
        self.maybe_finished = true;
        self.input(rank, *input);
        if call {
            self.count_call(rank);
        }
    }

    /// Takes the ends of `rank`'s application calls out of its process, for the next sync.
    #[inline]
    pub(super) fn poll_app(&mut self, rank: u32) {
        let Some(link) = self.app.as_mut() else {
            return;
        };
        let Some(p) = self.slots[rank as usize].proc.as_mut() else {
            return;
        };
        while let Some(d) = p.poll_app() {
            link.done.push((rank, self.now, d));
            link.due = true;
        }
    }

    /// `rank` died: the application's process must too.
    pub(super) fn app_killed(&mut self, rank: u32) {
        if let Some(link) = self.app.as_mut() {
            link.app.killed(rank, self.now);
            link.due = true;
        }
    }
}
