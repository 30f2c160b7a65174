//! The quorum rendezvous: single-decree Paxos on the next generation.
//!
//! The acceptors for generation g+1 are the members of generation g (processes that installed
//! g; a restarted process has lost any promise it made, so it only ever answers as a joiner).
//! A proposer — a member that detected a failure, whose watchdog fired, or that admits a
//! joiner — picks a ballot above every one it has seen and:
//!
//! 1. sends `Prepare` to g's members and to the joiners it knows; each acceptor promises to
//!    ignore lower ballots and answers with what it accepted before and its progress. The
//!    proposer waits until everyone it does not suspect has answered, or the rendezvous timeout;
//! 2. with promises from a strict majority of g and at least `min_size` answers in all, it
//!    proposes the value accepted under the highest ballot if any acceptor reported one (the
//!    Paxos rule that keeps a possibly chosen value), else the ranks that answered (members
//!    first, at most `max_size`) resuming from the least progress among g's members, and sends
//!    `Accept`;
//! 3. once a strict majority of g accepted, the value is chosen: `Commit` goes to the new
//!    members, to g's members and to the joiners; each installs it, or learns it was left out.
//!
//! Without a majority the proposer reports `RendezvousWait` and retries later with a higher
//! ballot (backing off), so a minority side keeps waiting and rejoins when the partition heals.
//! A rank that promised a higher ballot follows its proposer, and proposes itself if no decision
//! arrives in time (later the further it sits in the group, so proposers rarely duel).

use super::msg::{Ballot, ElasticMsg, Proposal};
use super::{Decision, Elastic, ElasticConfig, Phase, Progress};
use crate::event::{AbortReason, Outbox, ProtoEvent};
use crate::time::Nanos;
use crate::types::{Generation, Rank};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One answer to a prepare.
#[derive(Clone, Debug)]
pub(super) struct Answer {
    pub incarnation: u32,
    pub voter: bool,
    pub accepted: Option<(Ballot, Arc<Proposal>)>,
    pub completed: Option<u32>,
}

/// A round this rank proposes.
#[derive(Debug)]
struct Round {
    target: Generation,
    ballot: Ballot,
    /// Set once phase 2 began.
    accepting: Option<Arc<Proposal>>,
    answers: BTreeMap<Rank, Answer>,
    /// Who has not answered the prepare yet (not counting suspected ranks).
    awaited: BTreeSet<Rank>,
    /// Members of the previous generation that accepted.
    accepts: BTreeSet<Rank>,
}

/// Acceptor and proposer state.
#[derive(Debug, Default)]
pub(super) struct Quorum {
    promised: Option<(Generation, Ballot)>,
    accepted: Option<(Generation, Ballot, Arc<Proposal>)>,
    max_round: u32,
    round: Option<Round>,
    /// Consecutive failed rounds (for the backoff).
    failures: u32,
}

impl Quorum {
    /// The round this rank proposes, if one is under way: its target generation, and whose
    /// answers it still awaits.
    pub(super) fn awaited(&self) -> Option<(Generation, Vec<Rank>)> {
        let r = self.round.as_ref()?;
        Some((r.target, r.awaited.iter().copied().collect()))
    }

    fn accepted_for(&self, target: Generation) -> Option<(Ballot, Arc<Proposal>)> {
        self.accepted
            .as_ref()
            .filter(|(t, _, _)| *t == target)
            .map(|(_, b, p)| (*b, p.clone()))
    }

    /// Whether a promise for `target` forbids `ballot`.
    fn forbids(&self, target: Generation, ballot: Ballot) -> Option<Ballot> {
        self.promised
            .filter(|(t, b)| *t == target && *b > ballot)
            .map(|(_, b)| b)
    }

    pub(super) fn installed(&mut self) {
        self.round = None;
        self.failures = 0;
    }

    pub(super) fn abandon(&mut self) {
        self.round = None;
    }
}

impl Elastic {
    /// Starts a round for the next generation.
    pub(super) fn propose(&mut self, now: Nanos, progress: Progress, out: &mut Outbox) -> Decision {
        let target = self.next();
        let q = &mut self.quorum;
        q.max_round += 1;
        let ballot = Ballot {
            round: q.max_round,
            rank: self.me,
        };
        q.promised = Some((target, ballot));
        let mut answers = BTreeMap::new();
        answers.insert(
            self.me,
            Answer {
                incarnation: self.incarnation,
                voter: true,
                accepted: q.accepted_for(target),
                completed: Some(progress.completed),
            },
        );
        let mut asked: BTreeSet<Rank> = self.current.ranks().iter().copied().collect();
        asked.extend(self.joiners.iter().copied());
        asked.remove(&self.me);
        for &r in &asked {
            self.send(out, r, ElasticMsg::Prepare { target, ballot });
        }
        asked.retain(|r| !self.detector.suspects(*r));
        self.quorum.round = Some(Round {
            target,
            ballot,
            accepting: None,
            answers,
            awaited: asked,
            accepts: BTreeSet::new(),
        });
        self.set_timer(now, self.cfg.rendezvous_timeout(), out);
        if self
            .quorum
            .round
            .as_ref()
            .is_some_and(|r| r.awaited.is_empty())
        {
            return self.collected(now, out);
        }
        Decision::None
    }

    /// Asks a joiner that showed up during the round's prepare phase.
    pub(super) fn invite(&mut self, r: Rank, out: &mut Outbox) {
        let Some(round) = self.quorum.round.as_mut() else {
            return;
        };
        if round.accepting.is_some() || round.answers.contains_key(&r) {
            return;
        }
        round.awaited.insert(r);
        let (target, ballot) = (round.target, round.ballot);
        self.send(out, r, ElasticMsg::Prepare { target, ballot });
    }

    pub(super) fn on_prepare(
        &mut self,
        now: Nanos,
        from: Rank,
        target: Generation,
        ballot: Ballot,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        self.quorum.max_round = self.quorum.max_round.max(ballot.round);
        let joiner = ElasticMsg::Promise {
            target,
            ballot,
            incarnation: self.incarnation,
            voter: false,
            accepted: None,
            completed: None,
        };
        let g = self.generation;
        if target <= g {
            self.send_commit(out, from); // the proposer is behind
            return Decision::None;
        }
        if self.phase == Phase::Joining {
            self.send(out, from, joiner);
            return Decision::None;
        }
        if target.0 > g.0 + 1 {
            // a generation after ours was decided without us hearing of it
            self.datagram(out, from, ElasticMsg::Query);
            self.send(out, from, joiner);
            let reason = format!(
                "rank {from} prepares generation {}, after one this rank missed",
                target.0
            );
            return self.enter_joining(now, &reason, out);
        }
        if let Some(promised) = self.quorum.forbids(target, ballot) {
            self.send(
                out,
                from,
                ElasticMsg::Reject {
                    target,
                    ballot,
                    promised,
                },
            );
            return Decision::None;
        }
        self.quorum.promised = Some((target, ballot));
        let promise = ElasticMsg::Promise {
            target,
            ballot,
            incarnation: self.incarnation,
            voter: true,
            accepted: self.quorum.accepted_for(target),
            completed: Some(progress.completed),
        };
        self.send(out, from, promise);
        self.stand_down(ballot);
        let d = self.join_rendezvous(from, target, out);
        if self.quorum.round.is_none() {
            self.follow(now, out);
        }
        d
    }

    pub(super) fn on_accept(
        &mut self,
        now: Nanos,
        from: Rank,
        target: Generation,
        ballot: Ballot,
        proposal: Arc<Proposal>,
        out: &mut Outbox,
    ) -> Decision {
        if self.phase == Phase::Joining || target != self.next() {
            return Decision::None;
        }
        if let Some(promised) = self.quorum.forbids(target, ballot) {
            let reject = ElasticMsg::Reject {
                target,
                ballot,
                promised,
            };
            self.send(out, from, reject);
            return Decision::None;
        }
        self.quorum.promised = Some((target, ballot));
        self.quorum.accepted = Some((target, ballot, proposal));
        self.send(out, from, ElasticMsg::Accepted { target, ballot });
        self.stand_down(ballot);
        let d = self.join_rendezvous(from, target, out);
        if self.quorum.round.is_none() {
            self.follow(now, out);
        }
        d
    }

    pub(super) fn on_promise(
        &mut self,
        now: Nanos,
        from: Rank,
        target: Generation,
        ballot: Ballot,
        mut answer: Answer,
        out: &mut Outbox,
    ) -> Decision {
        // only the processes that installed the previous generation vote
        answer.voter = answer.voter && self.current.has_process(from, answer.incarnation);
        let Some(r) = self.quorum.round.as_mut() else {
            return Decision::None;
        };
        if r.ballot != ballot || r.target != target || r.accepting.is_some() {
            return Decision::None;
        }
        r.answers.insert(from, answer);
        r.awaited.remove(&from);
        if r.awaited.is_empty() {
            return self.collected(now, out);
        }
        Decision::None
    }

    pub(super) fn on_reject(
        &mut self,
        now: Nanos,
        target: Generation,
        ballot: Ballot,
        promised: Ballot,
        out: &mut Outbox,
    ) -> Decision {
        self.quorum.max_round = self.quorum.max_round.max(promised.round);
        let ours = self
            .quorum
            .round
            .as_ref()
            .is_some_and(|r| r.ballot == ballot && r.target == target);
        if ours {
            self.quorum.round = None;
            self.follow(now, out);
        }
        Decision::None
    }

    pub(super) fn on_accepted(
        &mut self,
        now: Nanos,
        from: Rank,
        target: Generation,
        ballot: Ballot,
        out: &mut Outbox,
    ) -> Decision {
        let member = self.current.contains(from);
        let Some(r) = self.quorum.round.as_mut() else {
            return Decision::None;
        };
        if r.ballot != ballot || r.target != target || r.accepting.is_none() {
            return Decision::None;
        }
        if member {
            r.accepts.insert(from);
        }
        self.maybe_chosen(now, out)
    }

    /// The rendezvous timer fired.
    pub(super) fn quorum_deadline(
        &mut self,
        now: Nanos,
        progress: Progress,
        out: &mut Outbox,
    ) -> Decision {
        match &self.quorum.round {
            Some(r) if r.accepting.is_none() => self.collected(now, out),
            Some(_) => {
                // phase 2 did not reach a majority in time
                self.quorum.round = None;
                self.quorum.failures += 1;
                self.retry_later(now, out);
                Decision::None
            }
            None => {
                // a follower whose proposer went quiet, or a retry after a failed round
                if !self.no_retry || self.quorum.failures == 0 {
                    self.propose(now, progress, out)
                } else {
                    Decision::None
                }
            }
        }
    }

    /// Every awaited answer is in, or the time is up: propose, or wait.
    fn collected(&mut self, now: Nanos, out: &mut Outbox) -> Decision {
        let n = self.current.members.len();
        let Some(r) = self.quorum.round.as_mut() else {
            return Decision::None;
        };
        let voters: Vec<Rank> = r
            .answers
            .iter()
            .filter(|(_, a)| a.voter)
            .map(|(k, _)| *k)
            .collect();
        // members carried over first, then newcomers, at most max_size
        let mut candidates: Vec<(Rank, u32)> = r
            .answers
            .iter()
            .filter(|(_, a)| a.voter)
            .chain(r.answers.iter().filter(|(_, a)| !a.voter))
            .map(|(k, a)| (*k, a.incarnation))
            .collect();
        candidates.truncate(self.cfg.max_size as usize);
        let majority = voters.len() * 2 > n;
        let enough = candidates.len() >= self.cfg.min_size as usize;
        if (majority || self.no_quorum) && enough {
            let resume = r
                .answers
                .values()
                .filter(|a| a.voter)
                .filter_map(|a| a.completed)
                .min()
                .unwrap_or(self.current.resume);
            let proposal = r
                .answers
                .values()
                .filter_map(|a| a.accepted.clone())
                .max_by_key(|(b, _)| *b)
                .map(|(_, p)| p)
                .unwrap_or_else(|| Proposal::new(candidates, resume));
            let (target, ballot) = (r.target, r.ballot);
            r.accepting = Some(proposal.clone());
            r.accepts.insert(self.me);
            let others: Vec<Rank> = voters.into_iter().filter(|&v| v != self.me).collect();
            self.quorum.accepted = Some((target, ballot, proposal.clone()));
            for v in others {
                let accept = ElasticMsg::Accept {
                    target,
                    ballot,
                    proposal: proposal.clone(),
                };
                self.send(out, v, accept);
            }
            self.set_timer(now, self.cfg.rendezvous_timeout(), out);
            return self.maybe_chosen(now, out);
        }
        let target = r.target;
        let reachable: Vec<Rank> = r.answers.keys().copied().collect();
        let quorum = ElasticConfig::quorum_of(n);
        let reason = if !majority {
            format!(
                "quorum lost: {} of the {n} members of generation {} answered, a strict majority is {quorum}",
                voters.len(),
                self.generation.0
            )
        } else {
            format!(
                "too few ranks: {} answered, min_size is {}",
                reachable.len(),
                self.cfg.min_size
            )
        };
        self.quorum.round = None;
        self.quorum.failures += 1;
        self.wait(target, reachable, quorum, reason, out);
        self.retry_later(now, out);
        Decision::None
    }

    /// Commits the proposal once a strict majority of the previous generation accepted it.
    fn maybe_chosen(&mut self, now: Nanos, out: &mut Outbox) -> Decision {
        let n = self.current.members.len();
        let Some(r) = self.quorum.round.as_ref() else {
            return Decision::None;
        };
        let Some(proposal) = r.accepting.clone() else {
            return Decision::None;
        };
        let chosen = if !self.no_quorum {
            r.accepts.len() * 2 > n
        } else {
            // the broken variant: every voter that answered accepted, however few
            let voters = r.answers.values().filter(|a| a.voter).count();
            r.accepts.len() >= voters
        };
        if !chosen {
            return Decision::None;
        }
        let target = r.target;
        self.quorum.round = None;
        self.quorum.failures = 0;
        let mut to: BTreeSet<Rank> = proposal.ranks().iter().copied().collect();
        to.extend(self.current.ranks().iter().copied());
        to.extend(self.joiners.iter().copied());
        to.remove(&self.me);
        for r in to {
            let commit = ElasticMsg::Commit {
                generation: target,
                proposal: proposal.clone(),
            };
            self.send(out, r, commit);
        }
        self.learn(now, target, proposal, out)
    }

    /// A higher ballot than our own round's: stop proposing.
    fn stand_down(&mut self, ballot: Ballot) {
        if self
            .quorum
            .round
            .as_ref()
            .is_some_and(|r| r.ballot < ballot)
        {
            self.quorum.round = None;
        }
    }

    /// A member hears of a rendezvous: it stops working.
    fn join_rendezvous(&mut self, from: Rank, target: Generation, out: &mut Outbox) -> Decision {
        if self.phase != Phase::Member {
            return Decision::None;
        }
        self.phase = Phase::Rendezvous;
        out.event(ProtoEvent::Membership(
            super::MemberEvent::RendezvousStart {
                target,
                reason: format!("rank {from} proposes generation {}", target.0),
            },
        ));
        Decision::Suspend {
            reason: AbortReason::MembershipChange(format!("rank {from} rebuilds the group")),
        }
    }

    /// Waits for a proposer's decision; proposes if none comes in time.
    fn follow(&mut self, now: Nanos, out: &mut Outbox) {
        let t = self.cfg.rendezvous_timeout();
        let patience = 2 * t + Nanos::from(self.position()) * (t / 4);
        self.set_timer(now, patience, out);
    }

    /// Retries after a failed round, backing off up to eight timeouts.
    fn retry_later(&mut self, now: Nanos, out: &mut Outbox) {
        let t = self.cfg.rendezvous_timeout();
        let shift = self.quorum.failures.saturating_sub(1).min(3);
        let after = (t << shift) + Nanos::from(self.position()) * (t / 8);
        self.set_timer(now, after, out);
    }
}
