//! [`AnySchedule`]: a schedule stored inline in the executor, so that running a step does not
//! chase a pointer to a separate allocation (with thousands of ranks, each rank's state is cold
//! by the time its next chunk arrives, and every extra cache line shows).

use super::all_to_all::{Bruck, Pairwise};
use super::binomial::{BinomialBroadcast, BinomialReduce};
use super::direct::Direct;
use super::dissemination::Dissemination;
use super::gather::{BinomialGather, BinomialScatter};
use super::hierarchical::Hierarchical;
use super::rabenseifner::Rabenseifner;
use super::recursive_doubling::{RecursiveDoublingAllgather, RecursiveDoublingAllreduce};
use super::recursive_halving::RecursiveHalvingReduceScatter;
use super::ring::{RingAllgather, RingAllreduce, RingReduceScatter};
use super::scatter_allgather::ScatterAllgather;
use super::tree::Tree;
use super::{PairStep, Schedule, StepPlan};

macro_rules! any_schedule {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// One of the library's schedules, or any other implementation boxed.
        pub enum AnySchedule {
            $($variant($ty),)*
            Other(Box<dyn Schedule>),
        }

        impl Schedule for AnySchedule {
            fn steps(&self) -> u32 {
                match self {
                    $(AnySchedule::$variant(s) => s.steps(),)*
                    AnySchedule::Other(s) => s.steps(),
                }
            }

            fn nblocks(&self) -> u32 {
                match self {
                    $(AnySchedule::$variant(s) => s.nblocks(),)*
                    AnySchedule::Other(s) => s.nblocks(),
                }
            }

            fn modeled(&self, bytes: u64) -> u64 {
                match self {
                    $(AnySchedule::$variant(s) => s.modeled(bytes),)*
                    AnySchedule::Other(s) => s.modeled(bytes),
                }
            }

            fn plan(&self, step: u32, plan: &mut StepPlan) {
                match self {
                    $(AnySchedule::$variant(s) => s.plan(step, plan),)*
                    AnySchedule::Other(s) => s.plan(step, plan),
                }
            }

            #[inline]
            fn pair(&self, step: u32) -> Option<PairStep> {
                match self {
                    $(AnySchedule::$variant(s) => s.pair(step),)*
                    AnySchedule::Other(s) => s.pair(step),
                }
            }
        }

        $(impl From<$ty> for AnySchedule {
            fn from(s: $ty) -> AnySchedule {
                AnySchedule::$variant(s)
            }
        })*
    };
}

any_schedule! {
    RingAllreduce(RingAllreduce),
    RingAllgather(RingAllgather),
    RingReduceScatter(RingReduceScatter),
    RecursiveDoublingAllreduce(RecursiveDoublingAllreduce),
    RecursiveDoublingAllgather(RecursiveDoublingAllgather),
    RecursiveHalvingReduceScatter(RecursiveHalvingReduceScatter),
    Rabenseifner(Rabenseifner),
    Tree(Tree),
    Hierarchical(Hierarchical),
    BinomialBroadcast(BinomialBroadcast),
    BinomialReduce(BinomialReduce),
    ScatterAllgather(ScatterAllgather),
    Direct(Direct),
    Dissemination(Dissemination),
    Pairwise(Pairwise),
    Bruck(Bruck),
    BinomialGather(BinomialGather),
    BinomialScatter(BinomialScatter),
}

impl From<Box<dyn Schedule>> for AnySchedule {
    fn from(s: Box<dyn Schedule>) -> AnySchedule {
        AnySchedule::Other(s)
    }
}
