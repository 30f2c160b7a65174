//! Which events the log shows: by rank and by kind.
//!
//! Written as space-separated words: a number (or `r3`, `rank=3`) keeps events that involve
//! that rank; a word keeps the kinds it starts (`send`, `fault`, `comp` for compute and
//! complete); `-word` hides those kinds. Several ranks or kinds mean any of them.

use ringside_sim::trace::Event;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub ranks: Vec<u32>,
    pub kinds: Vec<String>,
    pub hidden: Vec<String>,
}

/// A filter that cannot be understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError(pub String);

const KINDS: [&str; 21] = [
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
    "flight_record",
    "workload_done",
    "rejoin_refused",
    "diagnosis",
    "end",
];

fn known_prefix(word: &str) -> Result<String, FilterError> {
    if KINDS.iter().any(|k| k.starts_with(word)) {
        Ok(word.to_string())
    } else {
        Err(FilterError(format!("no event kind starts with `{word}`")))
    }
}

impl EventFilter {
    pub fn parse(text: &str) -> Result<EventFilter, FilterError> {
        let mut f = EventFilter::default();
        for word in text.split_whitespace() {
            let word = word.to_ascii_lowercase();
            let rank = word
                .strip_prefix("rank=")
                .or_else(|| word.strip_prefix('r'))
                .unwrap_or(&word);
            if let Ok(r) = rank.parse::<u32>() {
                f.ranks.push(r);
            } else if let Some(kind) = word.strip_prefix('-') {
                f.hidden.push(known_prefix(kind)?);
            } else {
                f.kinds
                    .push(known_prefix(word.strip_prefix("kind=").unwrap_or(&word))?);
            }
        }
        Ok(f)
    }

    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty() && self.kinds.is_empty() && self.hidden.is_empty()
    }

    pub fn matches(&self, ev: &Event) -> bool {
        let kind = ev.kind();
        (self.ranks.is_empty() || self.ranks.iter().any(|r| ev.involves(*r)))
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| kind.starts_with(k.as_str())))
            && !self.hidden.iter().any(|k| kind.starts_with(k.as_str()))
    }

    /// The filter written back as words.
    pub fn describe(&self) -> String {
        let mut words: Vec<String> = self.ranks.iter().map(|r| format!("r{r}")).collect();
        words.extend(self.kinds.iter().cloned());
        words.extend(self.hidden.iter().map(|k| format!("-{k}")));
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
    }

    #[test]
    fn unknown_kinds_are_refused() {
        assert!(EventFilter::parse("bogus").is_err());
        assert!(EventFilter::parse("").unwrap().is_empty());
    }
}
