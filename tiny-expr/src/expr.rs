//! A single expression, parsed once and evaluated many times.

use std::fmt;

use serde_json::Value;

use crate::ast::Node;
use crate::error::{CompileError, EvalError};
use crate::eval::{eval, owned};
use crate::lexer::Mode;
use crate::parser::parse;

/// One parsed expression, written without the surrounding braces.
///
/// ```
/// use serde_json::json;
/// use tiny_expr::Expr;
///
/// let e = Expr::parse("$.price * $.qty > 100 ? 'bulk' : 'retail'")?;
/// assert_eq!(e.eval(&json!({"price": 30, "qty": 4}))?, json!("bulk"));
/// assert_eq!(e.eval(&json!({"price": 30, "qty": 1}))?, json!("retail"));
///
/// let name = Expr::parse("upper($.user.nick ?? $.user.name)")?;
/// assert_eq!(name.eval(&json!({"user": {"name": "ann"}}))?, json!("ANN"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Expr {
    node: Node,
    source: String,
}

impl Expr {
    /// Parses an expression such as `$.a + 1` (no `{{ }}`).
    ///
    /// # Errors
    ///
    /// A [`CompileError`] with an empty pointer and the char offset of the problem in
    /// `src`.
    pub fn parse(src: &str) -> Result<Expr, CompileError> {
        let (node, _) = parse(src, 0, Mode::Bare).map_err(|e| e.into_compile_error("", src))?;
        Ok(Expr {
            node,
            source: src.to_owned(),
        })
    }

    /// Evaluates the expression with `root` as `$`.
    ///
    /// # Errors
    ///
    /// An [`EvalError`] with an empty pointer and this expression's source.
    pub fn eval(&self, root: &Value) -> Result<Value, EvalError> {
        let _budget = crate::limits::Render::begin();
        eval(&self.node, root)
            .and_then(owned)
            .map_err(|f| f.into_eval_error("", &self.source))
    }

    /// The source text this expression was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}
