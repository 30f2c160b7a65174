//! Which events the log shows: by rank and by kind.
//!
//! Written as space-separated words: a number (or `r3`, `rank=3`, `rank 3`) keeps events that involve
//! that rank; a word keeps the kinds it starts (`send`, `fault`, `comp` for compute and
//! complete); `-word` hides those kinds; any other word keeps events whose description holds
//! it (`wrong`, `watchdog`, `1mib`), ignoring case. Several ranks or kinds mean any of them;
//! several other words must all be there.

use crate::state::describe::describe;
use ringside_sim::trace::Event;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub ranks: Vec<u32>,
    pub kinds: Vec<String>,
    pub hidden: Vec<String>,
    /// Words to find in the event's description, lower case.
    pub text: Vec<String>,
}

/// A filter that cannot be understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError(pub String);

const KINDS: [&str; 22] = [
    "fault",
    "process_start",
    "process_death",
    "process_pause",
    "process_resume",
    "send",
    "deliver",
    "drop",
    "timer",
    "compute",
    "compute_done",
    "iteration",
    "call",
    "step",
    "complete",
    "abort",
    "unexpected",
    "flight_record",
    "workload_done",
    "rejoin_refused",
    "diagnosis",
    "end",
];

fn is_kind_prefix(word: &str) -> bool {
    KINDS.iter().any(|k| k.starts_with(word))
}

fn known_prefix(word: &str) -> Result<String, FilterError> {
    if is_kind_prefix(word) {
        Ok(word.to_string())
    } else {
        Err(FilterError(format!("no event kind starts with `{word}`")))
    }
}

impl EventFilter {
    pub fn parse(text: &str) -> Result<EventFilter, FilterError> {
        let mut f = EventFilter::default();
        let words: Vec<String> = text
            .split_whitespace()
            .map(|w| w.to_ascii_lowercase())
            .collect();
        for (i, word) in words.iter().enumerate() {
            // `rank 3` as people say it: the number that follows says which
            let says_rank = |w: Option<&String>| w.is_some_and(|w| w.parse::<u32>().is_ok());
            if word == "rank" && says_rank(words.get(i + 1)) {
                continue;
            }
            let word = word.clone();
            let rank = word
                .strip_prefix("rank=")
                .or_else(|| word.strip_prefix('r'))
                .unwrap_or(&word);
            if let Ok(r) = rank.parse::<u32>() {
                f.ranks.push(r);
            } else if let Some(kind) = word.strip_prefix('-') {
                f.hidden.push(known_prefix(kind)?);
            } else if let Some(kind) = word.strip_prefix("kind=") {
                f.kinds.push(known_prefix(kind)?);
            } else if is_kind_prefix(&word) {
                f.kinds.push(word);
            } else {
                f.text.push(word);
            }
        }
        Ok(f)
    }

    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
            && self.kinds.is_empty()
            && self.hidden.is_empty()
            && self.text.is_empty()
    }

    pub fn matches(&self, ev: &Event) -> bool {
        let kind = ev.kind();
        (self.ranks.is_empty() || self.ranks.iter().any(|r| ev.involves(*r)))
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| kind.starts_with(k.as_str())))
            && !self.hidden.iter().any(|k| kind.starts_with(k.as_str()))
            && (self.text.is_empty() || {
                let words = describe(ev).to_lowercase();
                self.text.iter().all(|t| words.contains(t.as_str()))
            })
    }

    /// The indices of the events that match, in order.
    pub fn matching(&self, events: &[(u64, Event)]) -> Vec<usize> {
        events
            .iter()
            .enumerate()
            .filter(|(_, (_, e))| self.matches(e))
            .map(|(i, _)| i)
            .collect()
    }

    /// The filter written back as words.
    pub fn describe(&self) -> String {
        let mut words: Vec<String> = self.ranks.iter().map(|r| format!("r{r}")).collect();
        words.extend(self.kinds.iter().cloned());
        words.extend(self.hidden.iter().map(|k| format!("-{k}")));
        words.extend(self.text.iter().cloned());
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(from: u32, to: u32) -> Event {
        Event::Send {
            id: 0,
            from,
            to,
            bytes: 1,
            msg: "coll".into(),
            seq: None,
            step: None,
            arrive_ns: 0,
        }
    }

    #[test]
    fn ranks_and_kinds_combine() {
        let f = EventFilter::parse("r2 send").unwrap();
        assert!(f.matches(&send(2, 0)));
        assert!(f.matches(&send(0, 2)));
        assert!(!f.matches(&send(0, 1)));
        assert!(!f.matches(&Event::ComputeDone { rank: 2 }));
        let f = EventFilter::parse("rank=1 3 -send").unwrap();
        assert_eq!(f.ranks, vec![1, 3]);
        assert!(!f.matches(&send(1, 0)));
        assert!(f.matches(&Event::ComputeDone { rank: 3 }));
        assert_eq!(f.describe(), "r1 r3 -send");
        // as people say it; `rank` alone is a word to look for
        let f = EventFilter::parse("Rank 100 send").unwrap();
        assert_eq!((f.ranks.as_slice(), f.text.len()), (&[100][..], 0));
        assert_eq!(EventFilter::parse("rank").unwrap().text, ["rank"]);
    }

    #[test]
    fn other_words_are_looked_for_in_the_description() {
        let f = EventFilter::parse("2→0 1B").unwrap();
        assert_eq!(f.text, ["2→0", "1b"]);
        assert!(f.matches(&send(2, 0)));
        assert!(!f.matches(&send(2, 1)));
        let f = EventFilter::parse("coll").unwrap();
        assert!(f.matches(&send(2, 0)));
        assert!(!f.matches(&Event::ComputeDone { rank: 2 }));
        assert!(
            EventFilter::parse("-bogus").is_err(),
            "only kinds can be hidden"
        );
        assert!(EventFilter::parse("").unwrap().is_empty());
    }
}
