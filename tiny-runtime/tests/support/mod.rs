//! What tiny-runtime's tests share; each test file takes what it uses.
#![allow(dead_code)]

pub mod gate;
pub mod runs;
pub mod sender;
pub mod tag;
