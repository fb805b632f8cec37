//! Code generation. Each derive has one file; each generated item one function.

pub mod component;
pub mod handlers;
pub mod round_trip;
pub mod schema;

#[cfg(test)]
mod tests;
