//! Public error types and the internal evaluation fault.

use std::fmt;

/// The marker inserted into an expression to show where a syntax error is.
const CARET: char = '\u{2038}'; // ‸

/// A configuration could not be compiled: bad syntax, an unknown function, wrong arity,
/// an invalid JSONPath or regular expression, or an unclosed `{{`.
///
/// `Display` renders everything on one line, with a caret (`‸`) marking the column:
///
/// ```
/// use serde_json::json;
/// let err = tiny_expr::Template::compile(&json!({"a": "{{1 + * 2}}"})).unwrap_err();
/// assert_eq!(err.pointer, "/a");
/// assert_eq!(err.offset, 6);
/// assert_eq!(
///     err.to_string(),
///     r#"at /a, in "{{1 + ‸* 2}}" (column 7): expected a value, found '*'"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// JSON pointer (RFC 6901) of the field holding the string, e.g. `/headers/0/value`.
    /// Empty for the root and for [`Expr::parse`](crate::Expr::parse).
    pub pointer: String,
    /// Offset, in chars (not bytes), of the problem within [`expression`](Self::expression).
    pub offset: usize,
    /// The whole string that failed to compile, verbatim.
    pub expression: String,
    /// What is wrong, e.g. `expected a value, found '*'`.
    pub message: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.pointer.is_empty() {
            write!(f, "at {}, ", self.pointer)?;
        }
        f.write_str("in \"")?;
        let (from, to) = shown(&self.expression, self.offset);
        if from > 0 {
            f.write_str(ELLIPSIS)?;
        }
        let mut marked = false;
        for (i, c) in self.expression.chars().enumerate().take(to).skip(from) {
            if i == self.offset {
                write!(f, "{CARET}")?;
                marked = true;
            }
            write_escaped_char(f, c)?;
        }
        if to < self.expression.chars().count() {
            f.write_str(ELLIPSIS)?;
        } else if !marked {
            write!(f, "{CARET}")?;
        }
        write!(f, "\" (column {}): {}", self.offset + 1, self.message)
    }
}

/// How much of a long expression an error shows on each side of the place it names: a
/// message that quoted a 60 KB expression whole would bury what it says (and swell the
/// node's status).
const CONTEXT_CHARS: usize = 60;
const ELLIPSIS: &str = "\u{2026}";

/// The range of chars of `expression` to show around `offset`.
fn shown(expression: &str, offset: usize) -> (usize, usize) {
    let len = expression.chars().count();
    if len <= 2 * CONTEXT_CHARS {
        return (0, len);
    }
    let from = offset.saturating_sub(CONTEXT_CHARS);
    (from, (offset + CONTEXT_CHARS).min(len))
}

impl std::error::Error for CompileError {}

/// An expression failed while rendering a message: a path matched nothing, an operand had
/// the wrong type, a division by zero, a bad argument to a function.
///
/// `Display` renders everything on one line:
///
/// ```
/// use serde_json::json;
/// let t = tiny_expr::Template::compile(&json!({"user": {"name": "{{$.user.nmae}}"}})).unwrap();
/// let err = t.render(&json!({"user": {"name": "Ann"}})).unwrap_err();
/// assert_eq!(err.pointer, "/user/name");
/// assert_eq!(
///     err.to_string(),
///     r#"at /user/name, in "{{$.user.nmae}}": path $.user.nmae matched nothing ($.user has no key "nmae")"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    /// JSON pointer (RFC 6901) of the field whose expression failed; empty for the root and
    /// for [`Expr::eval`](crate::Expr::eval).
    pub pointer: String,
    /// The failing expression verbatim, braces included (`{{$.a * 2}}`). When a string holds
    /// several expressions this is the one that failed. For [`Expr::eval`](crate::Expr::eval)
    /// it is the source passed to [`Expr::parse`](crate::Expr::parse).
    pub expression: String,
    /// What went wrong, e.g. `operator '*' cannot be applied to string and number`.
    pub message: String,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.pointer.is_empty() {
            write!(f, "at {}, ", self.pointer)?;
        }
        f.write_str("in \"")?;
        let (_, to) = shown(&self.expression, 0);
        for c in self.expression.chars().take(to) {
            write_escaped_char(f, c)?;
        }
        if to < self.expression.chars().count() {
            f.write_str(ELLIPSIS)?;
        }
        write!(f, "\": {}", self.message)
    }
}

impl std::error::Error for EvalError {}

/// Keeps the rendering on one line: control characters are shown escaped.
fn write_escaped_char(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    match c {
        '\n' => f.write_str("\\n"),
        '\r' => f.write_str("\\r"),
        '\t' => f.write_str("\\t"),
        c if c.is_control() => write!(f, "\\u{{{:x}}}", c as u32),
        c => write!(f, "{c}"),
    }
}

/// A syntax error found while lexing or parsing, positioned by byte offset in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// Byte offset into the string being compiled.
    pub(crate) at: usize,
    pub(crate) message: String,
}

impl SyntaxError {
    pub(crate) fn new(at: usize, message: impl Into<String>) -> Self {
        SyntaxError {
            at,
            message: message.into(),
        }
    }

    /// Turns this into a public error about `source` found at `pointer`.
    pub(crate) fn into_compile_error(self, pointer: &str, source: &str) -> CompileError {
        let at = self.at.min(source.len());
        let offset = source.char_indices().take_while(|(i, _)| *i < at).count();
        CompileError {
            pointer: pointer.to_owned(),
            offset,
            expression: source.to_owned(),
            message: self.message,
        }
    }
}

/// Why an evaluation failed. `??` catches [`FaultKind::NoMatch`] and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultKind {
    /// A JSONPath selected no node.
    NoMatch,
    /// Any other failure (types, arithmetic, function arguments).
    Other,
}

/// An evaluation failure before it is tied to a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) kind: FaultKind,
    pub(crate) message: String,
}

impl Fault {
    pub(crate) fn no_match(message: String) -> Self {
        Fault {
            kind: FaultKind::NoMatch,
            message,
        }
    }

    pub(crate) fn other(message: impl Into<String>) -> Self {
        Fault {
            kind: FaultKind::Other,
            message: message.into(),
        }
    }

    pub(crate) fn into_eval_error(self, pointer: &str, expression: &str) -> EvalError {
        EvalError {
            pointer: pointer.to_owned(),
            expression: expression.to_owned(),
            message: self.message,
        }
    }
}

/// Appends one reference token to a JSON pointer, escaping `~` and `/` (RFC 6901).
pub(crate) fn push_pointer_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_tokens_are_escaped() {
        let mut p = String::new();
        push_pointer_token(&mut p, "a/b");
        push_pointer_token(&mut p, "c~d");
        push_pointer_token(&mut p, "0");
        assert_eq!(p, "/a~1b/c~0d/0");
    }

    #[test]
    fn caret_at_end_of_expression() {
        let err = CompileError {
            pointer: String::new(),
            offset: 3,
            expression: "1 +".into(),
            message: "expected a value, found end of expression".into(),
        };
        assert_eq!(
            err.to_string(),
            "in \"1 +\u{2038}\" (column 4): expected a value, found end of expression"
        );
    }

    #[test]
    fn newlines_are_escaped_in_display() {
        let err = EvalError {
            pointer: "/a".into(),
            expression: "{{$.a\n}}".into(),
            message: "m".into(),
        };
        assert_eq!(err.to_string(), "at /a, in \"{{$.a\\n}}\": m");
    }

    #[test]
    fn a_long_expression_is_shown_around_the_error() {
        let expression = format!("{}+*{}", "1+".repeat(500), "2".repeat(500));
        let err = CompileError {
            pointer: "/a".into(),
            offset: 1001,
            expression,
            message: "expected a value, found '*'".into(),
        };
        let text = err.to_string();
        assert!(text.len() < 200, "{text}");
        assert!(text.starts_with("at /a, in \"\u{2026}+1+1"), "{text}");
        assert!(text.contains("1++\u{2038}*22"), "{text}");
        assert!(
            text.ends_with("2\u{2026}\" (column 1002): expected a value, found '*'"),
            "{text}"
        );
        let eval = EvalError {
            pointer: String::new(),
            expression: format!("{{{{{}}}}}", "$.a+".repeat(100)),
            message: "m".into(),
        };
        assert!(eval.to_string().len() < 200, "{eval}");
    }

    #[test]
    fn byte_offsets_become_char_offsets() {
        let e = SyntaxError::new("ééé".len(), "m").into_compile_error("", "éééx");
        assert_eq!(e.offset, 3);
    }
}
