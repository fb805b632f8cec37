//! Whether a new build of a module still accepts what is deployed: [`schema_changes`]
//! compares the port schemas of two builds (`compare`), and [`check_upgrade`] weighs
//! each change against the deployed nodes' edge mappings and settings (`weigh`;
//! `<module> check-upgrade`); `findings` holds what they say.

mod compare;
mod findings;
#[cfg(test)]
mod tests;
mod weigh;

pub use compare::schema_changes;
pub use findings::{Change, ChangeKind, Finding, Verdict};
pub use weigh::check_upgrade;
