fn main() {
    use tiny_sdk::Component;
    for p in tiny_example_hello::Hello::ports() {
        println!("== {} ({:?})\n{}", p.name, p.direction, serde_json::to_string_pretty(&(p.schema)()).unwrap());
        println!("default: {}", (p.default_config)());
    }
}
