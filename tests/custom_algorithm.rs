//! Algorithms of one's own, registered under names of their own (the example crate
//! `examples/bidi-ring` runs one under faults and the checker): what registration accepts and
//! refuses, a registered name as a word of the scenario format, and the one-line error of a
//! program that did not register the name a scenario uses.

mod common;

use ringside_sim::proto::collective::custom::{self, GroupCtx, RegisterError, ScheduleFactory};
use ringside_sim::proto::collective::{Action, Schedule, StepPlan};
use ringside_sim::run::{run, RunOptions};
use ringside_sim::scenario::{Algorithm, OpKind, Outcome};

/// A broadcast in p - 1 steps: in step s the root sends the buffer to rank s + 1 (relative to
/// the root), which copies it.
struct Chain {
    me: u32,
    p: u32,
    root: u32,
}

impl Schedule for Chain {
    fn steps(&self) -> u32 {
        self.p - 1
    }
    fn nblocks(&self) -> u32 {
        1
    }
    fn plan(&self, step: u32, plan: &mut StepPlan) {
        let rel = (self.me + self.p - self.root) % self.p;
        let to = (self.root + step + 1) % self.p;
        if rel == 0 {
            plan.send(to, &[(0, 1)]);
        } else if rel == step + 1 {
            plan.recv(self.root, &[(0, 1)], Action::Copy);
        }
    }
}

fn chain() -> ScheduleFactory {
    ScheduleFactory::new("root_chain", &[OpKind::Broadcast], |g: &GroupCtx| {
        Box::new(Chain {
            me: g.ctx.me,
            p: g.ctx.p,
            root: g.ctx.root,
        })
    })
}

/// `root_chain`, registered by whichever test comes first.
fn registered() -> Algorithm {
    match custom::register(chain()) {
        Ok(a) | Err(RegisterError::Taken(a)) => a,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_registered_broadcast_runs_from_a_scenario_at_every_root() {
    let a = registered();
    assert_eq!(a.to_string(), "root_chain");
    assert!(a.is_custom() && a.implements(OpKind::Broadcast) && !a.implements(OpKind::Allreduce));
    assert!(Algorithm::all_for(OpKind::Broadcast).contains(&a));
    for p in [1, 2, 5] {
        for root in 0..p {
            let s = common::scenario(&format!(
                "name = \"chain\"\n[world]\nsize = {p}\n[workload]\nelements = 7\n\
                 [[workload.ops]]\nop = \"broadcast\"\nalgorithm = \"root_chain\"\n\
                 bytes = \"1KiB\"\nroot = {root}\n"
            ));
            let out = run(&s, &RunOptions::default()).expect("runs");
            assert_eq!(out.report.outcome, Outcome::Completed, "p = {p}");
            assert!(
                out.report.ops.iter().all(|o| o.correct),
                "p = {p}, root {root}"
            );
        }
    }
}

#[test]
fn registration_refuses_bad_and_taken_names() {
    let a = registered();
    let again = custom::register(chain()).unwrap_err();
    assert_eq!(again, RegisterError::Taken(a));
    assert_eq!(again.to_string(), "`root_chain` is already an algorithm");
    let stock = ScheduleFactory::new("ring", &[OpKind::Allreduce], |_: &GroupCtx| unreachable!());
    assert_eq!(
        custom::register(stock),
        Err(RegisterError::Taken(Algorithm::Ring))
    );
    for bad in ["", "Chain", "2ring", "bidi-ring", "ring "] {
        let f = ScheduleFactory::new(bad, &[OpKind::Allreduce], |_: &GroupCtx| unreachable!());
        assert_eq!(custom::register(f), Err(RegisterError::BadName(bad)));
    }
    let p2p = ScheduleFactory::new("my_send", &[OpKind::Send], |_: &GroupCtx| unreachable!());
    assert_eq!(custom::register(p2p), Err(RegisterError::NoOps("my_send")));
    let none = ScheduleFactory::new("nothing", &[], |_: &GroupCtx| unreachable!());
    assert_eq!(custom::register(none), Err(RegisterError::NoOps("nothing")));
}

#[test]
fn a_scenario_that_uses_it_for_another_op_is_refused_with_the_choices() {
    registered();
    let e = ringside_sim::scenario::parse(
        "name = \"x\"\n[world]\nsize = 2\n[workload]\n\
         [[workload.ops]]\nop = \"allreduce\"\nalgorithm = \"root_chain\"\nbytes = \"1KiB\"\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("workload.ops[0].algorithm"), "{e}");
    assert!(
        e.contains("`root_chain` is not an algorithm for allreduce"),
        "{e}"
    );
}

#[test]
fn a_program_that_did_not_register_a_name_refuses_it_in_one_line() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bidi.toml");
    std::fs::write(
        &path,
        "name = \"bidi\"\n[world]\nsize = 4\n[workload]\n\
         [[workload.ops]]\nop = \"allreduce\"\nalgorithm = \"bidi_ring\"\nbytes = \"1KiB\"\n",
    )
    .expect("written");
    let o = common::ringside(&["run".as_ref(), path.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", common::text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bidi.toml"), "{err}");
    assert!(err.contains("`bidi_ring`"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
