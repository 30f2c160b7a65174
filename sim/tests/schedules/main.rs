//! Tests of every schedule, run by a small in-test driver (`driver`): results against a
//! reference (`results`), and completion times against the textbook cost formulas (`timing`).

mod driver;
mod results;
mod timing;
