//! One module per subcommand.

pub mod check;
pub mod explain;
pub mod export;
pub mod import;
pub mod launch;
pub mod replay;
pub mod run;
pub mod sweep;
pub mod tui;
pub mod worker;

use crate::Failure;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use ringside_sim::proto::mutation::Mutation;
use ringside_sim::scenario::{self, Scenario};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// Loads a scenario, mapping any problem to exit code 2.
pub fn load_scenario(path: &Path) -> Result<Scenario, Failure> {
    scenario::load_with(path, &ringside_sim::engine::SUPPORT)
        .map_err(|e| Failure::Input(e.to_string()))
}

/// The values of `--mutation`: the name of any planted bug, all of them listed in `--help`.
pub fn mutation_names() -> impl TypedValueParser<Value = Mutation> {
    PossibleValuesParser::new(Mutation::names()).try_map(|name| name.parse::<Mutation>())
}

/// A flag set by Ctrl-C (installed once).
pub fn interrupt_flag() -> Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        // if a handler cannot be installed the run simply cannot be interrupted gracefully
        let _ = ctrlc::set_handler(move || f.store(true, std::sync::atomic::Ordering::SeqCst));
        flag
    })
    .clone()
}
