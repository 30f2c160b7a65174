//! Semantic checks that serde cannot express.

use super::model::*;

/// Checks a parsed scenario; on failure returns (key path, message).
pub fn validate(s: &Scenario) -> Result<(), (String, String)> {
    if s.world.size == 0 {
        return Err((
            "world.size".into(),
            "the world needs at least one rank".into(),
        ));
    }
    Ok(())
}
