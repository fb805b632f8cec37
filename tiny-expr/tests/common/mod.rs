//! Helpers shared by the integration tests.
#![allow(dead_code)]

use serde_json::Value;
use tiny_expr::{CompileError, EvalError, Expr, Template};

/// Parses and evaluates `src`, panicking with the error text on failure.
pub fn ev(src: &str, root: &Value) -> Value {
    let expr = Expr::parse(src).unwrap_or_else(|e| panic!("parse {src:?}: {e}"));
    expr.eval(root).unwrap_or_else(|e| panic!("eval {src:?}: {e}"))
}

/// Evaluates `src` against `null`.
pub fn ev0(src: &str) -> Value {
    ev(src, &Value::Null)
}

/// The evaluation error of `src`; panics if it parses badly or succeeds.
pub fn eval_err(src: &str, root: &Value) -> EvalError {
    let expr = Expr::parse(src).unwrap_or_else(|e| panic!("parse {src:?}: {e}"));
    match expr.eval(root) {
        Ok(v) => panic!("{src:?} evaluated to {v}, expected an error"),
        Err(e) => e,
    }
}

/// The message of the evaluation error of `src` against `null`.
pub fn err0(src: &str) -> String {
    eval_err(src, &Value::Null).message
}

/// The parse error of `src`; panics if it parses.
pub fn parse_err(src: &str) -> CompileError {
    match Expr::parse(src) {
        Ok(e) => panic!("{src:?} parsed as {e:?}, expected an error"),
        Err(e) => e,
    }
}

/// Compiles and renders a template, panicking on failure.
pub fn render(config: &Value, root: &Value) -> Value {
    let t = Template::compile(config).unwrap_or_else(|e| panic!("compile: {e}"));
    t.render(root).unwrap_or_else(|e| panic!("render: {e}"))
}
