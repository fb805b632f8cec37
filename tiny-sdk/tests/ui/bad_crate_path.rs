use tiny_sdk::prelude::*;

#[derive(Component, Default)]
#[component(name = "a", crate = "not a path")]
pub struct A {}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[tiny(crate = 5)]
pub struct B {
    pub x: u32,
}

fn main() {}
