use super::*;
use std::collections::BTreeSet;
use std::hash::DefaultHasher;

fn cause(s: &str) -> RootCause {
    s.parse()
        .unwrap_or_else(|e| panic!("{s:?} was rejected: {e}"))
}

fn hash_of(c: &RootCause) -> u64 {
    let mut h = DefaultHasher::new();
    c.hash(&mut h);
    h.finish()
}

fn ranks(r: &[u32]) -> Vec<Rank> {
    r.iter().copied().map(Rank).collect()
}

#[test]
fn the_vocabulary_round_trips_as_written() {
    for s in [
        "preempted:2",
        "paused:0",
        "partitioned:0,1|2,3",
        "partitioned:0|1|2",
        "partitioned:3,2|1,0",
        "mismatch:1",
        "skipped:3",
        "hung:4",
        "deadlock:0,1",
        "deadlock:2,0,1",
        "quorum_lost",
        "slow:7",
        "missing:3",
        "undecided",
        "preempted:4294967295",
    ] {
        let c = cause(s);
        assert_eq!(c.to_string(), s);
        assert_eq!(cause(&c.to_string()), c);
        // serde: the same string
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, format!("\"{s}\""));
        let back: RootCause = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_string(), s);
    }
}

#[test]
fn each_string_names_its_variant() {
    let r = Rank;
    for (s, c) in [
        ("preempted:2", RootCause::Preempted(r(2))),
        ("paused:0", RootCause::Paused(r(0))),
        (
            "partitioned:0,1|2",
            RootCause::Partitioned(vec![ranks(&[0, 1]), ranks(&[2])]),
        ),
        ("mismatch:1", RootCause::Mismatch(r(1))),
        ("skipped:3", RootCause::Skipped(r(3))),
        ("hung:4", RootCause::Hung(r(4))),
        ("deadlock:1,0", RootCause::Deadlock(ranks(&[1, 0]))),
        ("slow:7", RootCause::Slow(r(7))),
        ("quorum_lost", RootCause::QuorumLost),
        ("watchdog_timeout", RootCause::WatchdogTimeout),
        ("missing:5", RootCause::Missing(vec![r(5)])),
        ("undecided", RootCause::Undecided),
    ] {
        assert_eq!(cause(s), c);
        assert_eq!(c.to_string(), s);
        assert_eq!(s.split(':').next(), Some(c.tag()));
    }
    assert_eq!(cause("deadlock:2,0,1").ranks(), ranks(&[2, 0, 1]));
    assert_eq!(cause("partitioned:3|0,2").ranks(), ranks(&[3, 0, 2]));
    assert!(cause("quorum_lost").ranks().is_empty());
}

#[test]
fn many_ranks_without_a_dump_are_one_cause_written_as_ranges() {
    let all: Vec<Rank> = (1..=4998).chain([5000]).map(Rank).collect();
    let c = cause("missing:1-4998,5000");
    assert_eq!(c, RootCause::missing(all.clone()));
    assert_eq!(c.to_string(), "missing:1-4998,5000");
    assert_eq!(c.ranks(), all);
    assert_eq!(c.rank(), None);
    assert_eq!(cause("missing:7").rank(), Some(Rank(7)));
    assert_eq!(cause("missing:3,1,2"), cause("missing:1,2,3"));
    // a range is bounded by the largest world, and read as the ranks it names
    for bad in [
        "missing:0-4000000000",
        "missing:5-2",
        "missing:1-3,2",
        "missing:-3",
    ] {
        assert!(bad.parse::<RootCause>().is_err(), "{bad}");
    }
}

#[test]
fn a_deadlock_is_the_same_whatever_rank_it_is_written_from() {
    let d = cause("deadlock:0,1,2");
    for s in [
        "deadlock:1,2,0",
        "deadlock:2,0,1",
        "deadlock:2,1,0",
        "deadlock:0,2,1",
    ] {
        let c = cause(s);
        assert_eq!(c, d, "{s}");
        assert_eq!(c.cmp(&d), Ordering::Equal, "{s}");
        assert_eq!(c.canonical().to_string(), "deadlock:0,1,2");
        assert_eq!(hash_of(&c), hash_of(&d), "{s}");
        // it still prints as written
        assert_eq!(c.to_string(), s);
    }
    assert_ne!(cause("deadlock:0,1"), d);
    assert_ne!(cause("deadlock:0,1,3"), d);
    let built = RootCause::deadlock(ranks(&[3, 1, 2]));
    assert_eq!(built.to_string(), "deadlock:1,2,3");
}

#[test]
fn a_partition_is_the_same_whatever_order_its_sides_are_written_in() {
    let p = cause("partitioned:0,1|2,3");
    for s in [
        "partitioned:2,3|0,1",
        "partitioned:1,0|3,2",
        "partitioned:3,2|1,0",
    ] {
        let c = cause(s);
        assert_eq!(c, p, "{s}");
        assert_eq!(hash_of(&c), hash_of(&p), "{s}");
        assert_eq!(c.canonical().to_string(), "partitioned:0,1|2,3");
        assert_eq!(c.to_string(), s);
    }
    assert_ne!(cause("partitioned:0,1|2|3"), p);
    assert_ne!(cause("partitioned:0,2|1,3"), p);
    let by_hand = RootCause::partitioned(vec![ranks(&[5]), ranks(&[4, 1])]);
    assert_eq!(by_hand.to_string(), "partitioned:1,4|5");
}

#[test]
fn causes_compare_as_sets() {
    let set = |v: &[&str]| v.iter().map(|s| cause(s)).collect::<BTreeSet<_>>();
    assert_eq!(
        set(&["preempted:2", "deadlock:3,1,2", "partitioned:4|0,5"]),
        set(&[
            "partitioned:0,5|4",
            "deadlock:1,2,3",
            "preempted:2",
            "preempted:2"
        ]),
    );
    assert_ne!(set(&["preempted:2"]), set(&["preempted:2", "paused:2"]));
    assert_ne!(set(&["slow:2"]), set(&["hung:2"]));
}

#[test]
fn causes_are_ordered_as_the_diagnosis_lists_them() {
    let listed = [
        "preempted:1",
        "preempted:10",
        "paused:0",
        "partitioned:0|1,2",
        "partitioned:0,1|2",
        "mismatch:3",
        "skipped:0",
        "hung:2",
        "deadlock:0,1",
        "deadlock:2,1,3",
        "slow:0",
        "quorum_lost",
        "missing:0",
        "undecided",
    ];
    let mut v: Vec<RootCause> = listed.iter().rev().map(|s| cause(s)).collect();
    v.sort();
    let got: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(got, listed);
}

#[test]
fn malformed_causes_are_rejected() {
    for s in [
        "",
        "preempted",
        "preempted:",
        "preempted:x",
        "preempted:+1",
        "preempted: 1",
        "preempted:1,2",
        "preempted:99999999999",
        "partitioned:0,1",
        "partitioned:0,1|",
        "partitioned:0,1|1,2",
        "partitioned:0,0|1",
        "deadlock:",
        "deadlock:1,1",
        "exploded:1",
        "quorum_lost:1",
        "undecided:1",
        "missing:",
        "Preempted:1",
    ] {
        assert!(s.parse::<RootCause>().is_err(), "{s:?} was accepted");
        let json = format!("\"{s}\"");
        assert!(serde_json::from_str::<RootCause>(&json).is_err(), "{s:?}");
    }
    let e = "exploded:1".parse::<RootCause>().unwrap_err().to_string();
    assert!(e.contains("preempted:R"), "{e}");
    let e = "paused:x".parse::<RootCause>().unwrap_err().to_string();
    assert_eq!(e, "`paused:x`: `x` is not a rank number");
}

#[test]
fn causes_are_listed_for_sentences() {
    let v = [cause("preempted:2"), cause("partitioned:0|1")];
    assert_eq!(listed(&v), "preempted:2, partitioned:0|1");
    assert_eq!(listed(&[]), "");
}
