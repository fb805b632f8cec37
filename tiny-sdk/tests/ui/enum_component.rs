// A component on an enum.
use tiny_sdk::prelude::*;

#[derive(Component)]
#[component(name = "light")]
pub enum Light {
    On,
    Off,
}

fn main() {}
