//! A quick render benchmark without external harnesses.
//!
//! `cargo run --release -p tiny-expr --example bench [iterations]`

use std::hint::black_box;
use std::time::Instant;

use serde_json::{Value, json};
use tiny_expr::Template;

fn message() -> Value {
    let items: Vec<Value> = (0..20)
        .map(|i| json!({"id": i, "sku": format!("SKU-{i}"), "price": 9.5 + f64::from(i), "qty": i % 3}))
        .collect();
    json!({
        "request": {
            "method": "POST",
            "path": "/orders",
            "headers": {"content-type": "application/json", "x-request-id": "abc-123"},
            "body": {"customer": {"id": 42, "name": "Ada Lovelace", "email": "ada@example.com"}, "items": items}
        },
        "meta": {"tenant": "acme", "retries": 0}
    })
}

fn run(name: &str, config: &Value, root: &Value, iterations: u32) {
    let template = match Template::compile(config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{name}: {e}");
            return;
        }
    };
    // Warm up and check that it renders.
    if let Err(e) = template.render(root) {
        eprintln!("{name}: {e}");
        return;
    }
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(template.render(black_box(root)).ok());
    }
    let per = start.elapsed() / iterations;
    println!("{name:<28} {per:>10.2?} per render");
}

fn main() {
    let iterations = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000u32);
    let root = message();

    let constant = json!({"a": 1, "b": ["x", "y"], "c": {"d": true}});
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(black_box(&constant).clone());
    }
    println!(
        "{:<28} {:>10.2?} per clone",
        "baseline: Value::clone",
        start.elapsed() / iterations
    );

    run(
        "constant",
        &json!({"a": 1, "b": ["x", "y"], "c": {"d": true}}),
        &root,
        iterations,
    );
    run(
        "one singular path",
        &json!({"id": "{{$.request.body.customer.id}}"}),
        &root,
        iterations,
    );
    run(
        "typical edge config",
        &json!({
            "customerId": "{{ $.request.body.customer.id }}",
            "greeting": "Hello {{ $.request.body.customer.name }} ({{ $.request.body.customer.email }})",
            "tenant": "{{ $.meta.tenant }}",
            "firstSku": "{{ $.request.body.items[0].sku }}",
            "isRetry": "{{ $.meta.retries > 0 }}",
            "note": "{{ $.request.body.note ?? 'none' }}",
            "method": "{{ lower($.request.method) }}",
            "static": {"version": 2, "source": "edge"}
        }),
        &root,
        iterations,
    );
    run(
        "wildcard + filter paths",
        &json!({
            "skus": "{{ $.request.body.items[*].sku }}",
            "total": "{{ sum($.request.body.items[*].price) }}",
            "cheap": "{{ $.request.body.items[?@.price < 12].id }}"
        }),
        &root,
        iterations / 10,
    );
    run("whole message", &json!("{{$}}"), &root, iterations / 10);
}
