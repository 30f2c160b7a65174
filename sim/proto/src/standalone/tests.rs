//! The executor's model, each rule held by a node that shows it.

use super::*;
use crate::registry::RegistryMsg;
use crate::types::{GroupId, SendToken};

/// A node that does what `script` says at each input, and notes every input with its time.
struct Scripted {
    script: fn(Rank, Nanos, &Input, &mut Outbox),
    me: Rank,
    seen: Vec<(Nanos, String)>,
}

impl Node for Scripted {
    fn wait_state(&self) -> Option<crate::node::Waiting> {
        None
    }
    fn finished(&self) -> bool {
        false
    }
    fn handle(&mut self, now: Nanos, input: Input, out: &mut Outbox) {
        (self.script)(self.me, now, &input, out);
        let what = match &input {
            Input::Start => "start".to_string(),
            Input::Message { from, .. } => format!("message from {}", from.0),
            Input::Timer(key) => format!("timer {key:?}"),
            Input::ComputeDone => "compute done".into(),
            Input::SendDone(_) => "send done".into(),
            other => format!("{other:?}"),
        };
        self.seen.push((now, what));
    }
}

fn nodes(n: u32, script: fn(Rank, Nanos, &Input, &mut Outbox)) -> Vec<Scripted> {
    (0..n)
        .map(|r| Scripted {
            script,
            me: Rank(r),
            seen: Vec::new(),
        })
        .collect()
}

fn seen(x: &Standalone<Scripted>, r: u32) -> Vec<(Nanos, String)> {
    x.node(Rank(r)).map(|n| n.seen.clone()).unwrap_or_default()
}

/// A message (what it holds does not matter here; its modeled size is given with the send).
fn msg() -> Msg {
    Msg::Registry(Box::new(RegistryMsg::Heartbeat { incarnation: 0 }))
}

/// Rank 0 sends rank 1 a message of 100 bytes at start.
fn one_message(me: Rank, _: Nanos, input: &Input, out: &mut Outbox) {
    if me == Rank(0) && matches!(input, Input::Start) {
        out.send(Rank(1), msg(), 100);
    }
}

#[test]
fn a_message_costs_its_latency_and_its_bytes_over_the_bandwidth() {
    let net = Network {
        latency: 5,
        bytes_per_ns: 10,
    };
    let x = {
        let mut x = Standalone::new(nodes(2, one_message), net);
        assert!(x.run(100));
        x
    };
    // it leaves at 0, reaches rank 1 at 5 and holds its port for 100 / 10 ns
    assert_eq!(seen(&x, 1)[1], (15, "message from 0".into()));
    assert_eq!(x.messages(), 1);
    let mut x = Standalone::new(nodes(2, one_message), Network::latency(5));
    x.run(100);
    assert_eq!(seen(&x, 1)[1], (5, "message from 0".into()));
}

/// Rank 0 sends three messages of 100 bytes to rank 1 at once.
fn three_messages(me: Rank, _: Nanos, input: &Input, out: &mut Outbox) {
    if me == Rank(0) && matches!(input, Input::Start) {
        for _ in 0..3 {
            out.send(Rank(1), msg(), 100);
        }
    }
}

#[test]
fn messages_take_the_ports_one_after_another() {
    let net = Network {
        latency: 5,
        bytes_per_ns: 10,
    };
    let mut x = Standalone::new(nodes(2, three_messages), net);
    x.run(100);
    let times: Vec<Nanos> = seen(&x, 1)[1..].iter().map(|s| s.0).collect();
    // they leave at 0, 10 and 20 and are taken in 10 ns each
    assert_eq!(times, [15, 25, 35]);
    let mut x = Standalone::new(nodes(2, three_messages), Network::INSTANT);
    x.run(100);
    let times: Vec<Nanos> = seen(&x, 1)[1..].iter().map(|s| s.0).collect();
    assert_eq!(times, [0, 0, 0]);
}

/// Sets timer 1 for 10, timer 2 for 20 then again for 30, timer 3 for 40 and cancels it.
fn timers(me: Rank, _: Nanos, input: &Input, out: &mut Outbox) {
    let key = |k| TimerKey::Registry { step: k };
    if me == Rank(0) && matches!(input, Input::Start) {
        out.set_timer(key(1), 10);
        out.set_timer(key(2), 20);
        out.set_timer(key(2), 30);
        out.set_timer(key(3), 40);
        out.cancel_timer(key(3));
    }
}

#[test]
fn a_timer_set_again_fires_once_at_its_new_time_and_a_cancelled_one_never() {
    let mut x = Standalone::new(nodes(1, timers), Network::INSTANT);
    assert!(x.run(100));
    let got: Vec<(Nanos, String)> = seen(&x, 0);
    assert_eq!(
        got,
        [
            (0, "start".to_string()),
            (10, "timer Registry { step: 1 }".into()),
            (30, "timer Registry { step: 2 }".into()),
        ]
    );
}

/// Computes for 7 ns at start; sends 50 bytes with a notice.
fn compute_and_notify(me: Rank, _: Nanos, input: &Input, out: &mut Outbox) {
    if me == Rank(0) && matches!(input, Input::Start) {
        out.compute(7);
        let token = SendToken {
            group: GroupId(0),
            peer: Rank(1),
            order: 1,
        };
        out.send_notify(Rank(1), msg(), 50, token);
    }
}

#[test]
fn compute_ends_after_its_duration_and_a_send_is_done_when_its_bytes_left() {
    let net = Network {
        latency: 100,
        bytes_per_ns: 10,
    };
    let mut x = Standalone::new(nodes(2, compute_and_notify), net);
    x.run(100);
    assert_eq!(
        seen(&x, 0),
        [
            (0, "start".to_string()),
            (5, "send done".into()),
            (7, "compute done".into())
        ]
    );
}

/// Every rank sends every other rank a message at start, and a reply to each message.
fn chatter(me: Rank, _: Nanos, input: &Input, out: &mut Outbox) {
    match input {
        Input::Start => {
            for to in (0..3).filter(|&r| r != me.0) {
                out.send(Rank(to), msg(), 1);
            }
        }
        Input::Message { from, .. } if me.0 < from.0 => out.send(*from, msg(), 1),
        _ => {}
    }
}

#[test]
fn an_isolated_rank_hears_nothing_until_the_heal_and_a_stopped_one_nothing_at_all() {
    let mut x = Standalone::new(nodes(3, chatter), Network::latency(10));
    x.isolate(&[Rank(2)]);
    x.run_until(100);
    // the start messages were sent before the cut: they all arrive; rank 0 replies to ranks 1
    // and 2, rank 1 to rank 2, but the replies to rank 2 cross the cut
    let heard = |x: &Standalone<Scripted>, r| seen(x, r).len() - 1;
    assert_eq!((heard(&x, 0), heard(&x, 1), heard(&x, 2)), (2, 3, 2));
    // every rank greets the others every 10 ns, from 10 ns on
    let greet = |me: Rank, now: Nanos, input: &Input, out: &mut Outbox| {
        if matches!(input, Input::Start | Input::Timer(_)) {
            if now > 0 {
                for to in (0..3).filter(|&r| r != me.0) {
                    out.send(Rank(to), msg(), 1);
                }
            }
            out.set_timer(TimerKey::Registry { step: 0 }, now + 10);
        }
    };
    let greetings = |x: &Standalone<Scripted>, r, from: u32| {
        seen(x, r)
            .into_iter()
            .filter(|(_, what)| *what == format!("message from {from}"))
            .map(|(t, _)| t)
            .collect::<Vec<Nanos>>()
    };
    let mut x = Standalone::new(nodes(3, greet), Network::latency(10));
    x.isolate(&[Rank(2)]);
    x.run_until(35);
    assert_eq!(greetings(&x, 0, 1), [20, 30]);
    assert_eq!(greetings(&x, 0, 2), []);
    assert_eq!(greetings(&x, 2, 0), []);
    x.heal();
    x.run_until(65);
    // what was sent at 30 crossed the cut; from 40 on all is heard
    assert_eq!(greetings(&x, 2, 0), [50, 60]);
    assert!(x.stop(Rank(1)).is_some());
    assert!(x.node(Rank(1)).is_none());
    x.run_until(95);
    // rank 1's last greeting was on its way when it stopped
    assert_eq!(greetings(&x, 0, 1), [20, 30, 40, 50, 60, 70]);
    assert_eq!(greetings(&x, 0, 2), [50, 60, 70, 80, 90]);
}

#[test]
fn simultaneous_events_are_handled_in_the_order_they_were_scheduled() {
    let run = || {
        let mut x = Standalone::new(nodes(3, chatter), Network::latency(10));
        x.run(1_000);
        (0..3).map(|r| seen(&x, r)).collect::<Vec<_>>()
    };
    let first = run();
    assert_eq!(first, run());
    // rank 2 hears rank 0 before rank 1: rank 0 sent first
    assert_eq!(
        first[2][1..3],
        [
            (10, "message from 0".to_string()),
            (10, "message from 1".into())
        ]
    );
}
