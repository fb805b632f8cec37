//! Target `expr`: compile and render templates and expressions.
//!
//! Input: `template [NUL root]`. The template part is compiled as a JSON template
//! when it is JSON, and always as one template string and as a bare expression; each
//! compiled form is rendered against the root part (JSON), or against a fixed
//! document with a bit of everything when there is none or it is not JSON.

use serde_json::{Value, json};
use tiny_expr::{Expr, Template};

/// Compiles and renders whatever `data` holds; errors are expected, panics are bugs.
pub fn run(data: &[u8]) {
    let (template, root) = crate::split(data);
    let root = root
        .and_then(|r| serde_json::from_slice::<Value>(r).ok())
        .unwrap_or_else(default_root);
    if let Ok(config) = serde_json::from_slice::<Value>(template) {
        render(&config, &root);
    }
    let Ok(text) = std::str::from_utf8(template) else {
        return;
    };
    render(&Value::String(text.to_owned()), &root);
    if let Ok(expr) = Expr::parse(text) {
        let _ = expr.eval(&root);
        let _ = expr.source();
    }
}

fn render(config: &Value, root: &Value) {
    match Template::compile(config) {
        Ok(t) => {
            let _ = t.is_constant();
            let rendered = t.render(root);
            if let Err(e) = &rendered {
                // Errors print on one line with their place.
                let _ = e.to_string();
            }
            // `rand`, `randint` and `now` give another value each render: the ways of
            // rendering are compared only on templates that cannot call them.
            if volatile(config) {
                return;
            }
            // Moving values out of `$` gives what copying them gives.
            let mut owned = root.clone();
            assert_eq!(t.render_taking(&mut owned), rendered, "render_taking differs");
            let (mut failed, mut failed_taking) = (Vec::new(), Vec::new());
            let lenient = t.render_lenient(root, &mut failed);
            let mut owned = root.clone();
            assert_eq!(
                t.render_lenient_taking(&mut owned, &mut failed_taking),
                lenient,
                "render_lenient_taking differs"
            );
            assert_eq!(failed_taking, failed, "render_lenient_taking fails differently");
            // An object's fields are its values, in its order; anything else is one value.
            let values = match (t.fields(), &lenient) {
                (Some(names), Value::Object(map)) => names.iter().map(|n| map[*n].clone()).collect(),
                _ => vec![lenient.clone()],
            };
            let mut owned = root.clone();
            let fields = t.render_fields_taking(&mut owned, Some(&mut Vec::new()));
            assert_eq!(fields, Ok(values), "render_fields_taking differs");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// Whether `config` may call a function whose value changes between renders (names
/// are matched without case, as the parser does).
fn volatile(config: &Value) -> bool {
    let text = config.to_string().to_ascii_lowercase();
    text.contains("rand") || text.contains("now")
}

fn default_root() -> Value {
    json!({
        "a": 1, "b": 2.5, "s": "text", "t": true, "n": null,
        "big": 9007199254740993i64, "neg": -3,
        "arr": [1, "two", {"x": 3}, [4, 5], null],
        "items": [{"id": 1, "price": 5}, {"id": 2, "price": 15}],
        "user": {"name": "Ann", "email": "ann@example.com", "tags": ["a", "b"]},
        "b64": "aGVsbG8=", "time": 1700000000
    })
}
