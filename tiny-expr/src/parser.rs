//! Builds the syntax tree from tokens by recursive descent.
//!
//! Precedence, loosest first:
//!
//! | level | operators | associativity |
//! |---|---|---|
//! | 1 | `c ? a : b` | right |
//! | 2 | `??` | right |
//! | 3 | `\|\|` | left |
//! | 4 | `&&` | left |
//! | 5 | `==` `!=` `=~` | left |
//! | 6 | `<` `<=` `>` `>=` | left |
//! | 7 | `+` `-` | left |
//! | 8 | `*` `/` `%` | left |
//! | 9 | unary `-` `!` | prefix |
//! | 10 | `**` | right, binds tighter than a unary operator on its left |

use crate::ast::{BinOp, Link, Node, Pattern, UnOp};
use crate::error::SyntaxError;
use crate::functions::Func;
use crate::lexer::{Mode, Punct, Token, TokenKind, tokenize};
use crate::limits::{MAX_SOURCE_BYTES, MAX_TERMS};
use crate::path::Path;

/// How deeply parentheses, calls and prefix operators may nest. With the operators of
/// one level kept in a list ([`Node::Chain`]), this bounds the height of the tree, and so
/// the stack that evaluating or dropping it takes.
const MAX_DEPTH: usize = 64;

/// Parses one expression of `src` starting at byte `start`. Returns the tree and the byte
/// offset just after it (after `}}` in template mode).
pub(crate) fn parse(src: &str, start: usize, mode: Mode) -> Result<(Node, usize), SyntaxError> {
    let (tokens, end) = tokenize(src, start, mode)?;
    // Braces included, in a template: the length the author sees.
    let from = match mode {
        Mode::Template { open } => open,
        Mode::Bare => start,
    };
    if end - from > MAX_SOURCE_BYTES {
        return Err(SyntaxError::new(
            from,
            format!(
                "expression is {} bytes long, more than the limit of {MAX_SOURCE_BYTES}",
                end - from
            ),
        ));
    }
    let mut p = Parser {
        src,
        tokens: &tokens,
        pos: 0,
        depth: 0,
        terms: 0,
    };
    if p.peek().kind == TokenKind::End {
        let at = match mode {
            Mode::Template { open } => open,
            Mode::Bare => start,
        };
        return Err(SyntaxError::new(at, "empty expression"));
    }
    let node = p.expr()?;
    let next = p.peek();
    if next.kind != TokenKind::End {
        return Err(SyntaxError::new(
            next.start,
            format!("unexpected {} after a complete expression", next.describe(src)),
        ));
    }
    Ok((node, end))
}

struct Parser<'t> {
    src: &'t str,
    tokens: &'t [Token],
    pos: usize,
    depth: usize,
    /// Values read so far (literals, paths, calls, arrays), against [`MAX_TERMS`].
    terms: usize,
}

impl<'t> Parser<'t> {
    fn peek(&self) -> &'t Token {
        // The token list always ends with `End`, and `pos` never moves past it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn bump(&mut self) -> &'t Token {
        let t = self.peek();
        if t.kind != TokenKind::End {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, p: Punct) -> bool {
        if self.peek().kind == TokenKind::Punct(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: Punct, context: &str) -> Result<(), SyntaxError> {
        if self.eat(p) {
            return Ok(());
        }
        let t = self.peek();
        Err(SyntaxError::new(
            t.start,
            format!("expected '{}' {context}, found {}", p.as_str(), t.describe(self.src)),
        ))
    }

    fn nest(&mut self, at: usize) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SyntaxError::new(
                at,
                format!("expression nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn term(&mut self, at: usize) -> Result<(), SyntaxError> {
        self.terms += 1;
        if self.terms > MAX_TERMS {
            return Err(SyntaxError::new(
                at,
                format!("expression has more than {MAX_TERMS} terms"),
            ));
        }
        Ok(())
    }

    /// Level 1: `c ? a : b`, right-associative.
    fn expr(&mut self) -> Result<Node, SyntaxError> {
        self.nest(self.peek().start)?;
        let cond = self.coalesce()?;
        let node = if self.eat(Punct::Question) {
            let then = self.expr()?;
            self.expect(Punct::Colon, "in 'condition ? a : b'")?;
            let otherwise = self.expr()?;
            Node::Cond(Box::new(cond), Box::new(then), Box::new(otherwise))
        } else {
            cond
        };
        self.depth -= 1;
        Ok(node)
    }

    /// Level 2: `a ?? b`, right-associative.
    fn coalesce(&mut self) -> Result<Node, SyntaxError> {
        let left = self.or()?;
        if self.eat(Punct::QuestionQuestion) {
            self.nest(self.peek().start)?;
            let right = self.coalesce()?;
            self.depth -= 1;
            return Ok(Node::Coalesce(Box::new(left), Box::new(right)));
        }
        Ok(left)
    }

    fn or(&mut self) -> Result<Node, SyntaxError> {
        let first = self.and()?;
        if self.peek().kind != TokenKind::Punct(Punct::OrOr) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(Punct::OrOr) {
            items.push(self.and()?);
        }
        Ok(Node::Any(items))
    }

    fn and(&mut self) -> Result<Node, SyntaxError> {
        let first = self.equality()?;
        if self.peek().kind != TokenKind::Punct(Punct::AndAnd) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(Punct::AndAnd) {
            items.push(self.equality()?);
        }
        Ok(Node::All(items))
    }

    fn equality(&mut self) -> Result<Node, SyntaxError> {
        let first = self.relational()?;
        self.chain(first, |p| {
            let op = match p.peek().kind {
                TokenKind::Punct(Punct::EqEq) => BinOp::Eq,
                TokenKind::Punct(Punct::NotEq) => BinOp::Ne,
                TokenKind::Punct(Punct::Match) => {
                    p.pos += 1;
                    return p.pattern().map(|pattern| Some(Link::Match(pattern)));
                }
                _ => return Ok(None),
            };
            p.pos += 1;
            Ok(Some(Link::Op(op, p.relational()?)))
        })
    }

    /// The right side of `=~`: a literal string is compiled as a regex now.
    fn pattern(&mut self) -> Result<Pattern, SyntaxError> {
        let at = self.peek().start;
        let right = self.relational()?;
        match right {
            Node::Literal(serde_json::Value::String(s)) => crate::limits::regex(&s)
                .map(Pattern::Fixed)
                .map_err(|e| SyntaxError::new(at, format!("invalid regular expression: {}", one_line(&e)))),
            Node::Literal(v) => Err(SyntaxError::new(
                at,
                format!(
                    "the right side of '=~' must be a string (a regular expression), found {}",
                    crate::value::type_name(&v)
                ),
            )),
            other => Ok(Pattern::Dynamic(Box::new(other))),
        }
    }

    fn relational(&mut self) -> Result<Node, SyntaxError> {
        let first = self.additive()?;
        self.chain(first, |p| {
            let op = match p.peek().kind {
                TokenKind::Punct(Punct::Lt) => BinOp::Lt,
                TokenKind::Punct(Punct::Le) => BinOp::Le,
                TokenKind::Punct(Punct::Gt) => BinOp::Gt,
                TokenKind::Punct(Punct::Ge) => BinOp::Ge,
                _ => return Ok(None),
            };
            p.pos += 1;
            Ok(Some(Link::Op(op, p.additive()?)))
        })
    }

    fn additive(&mut self) -> Result<Node, SyntaxError> {
        let first = self.multiplicative()?;
        self.chain(first, |p| {
            let op = match p.peek().kind {
                TokenKind::Punct(Punct::Plus) => BinOp::Add,
                TokenKind::Punct(Punct::Minus) => BinOp::Sub,
                _ => return Ok(None),
            };
            p.pos += 1;
            Ok(Some(Link::Op(op, p.multiplicative()?)))
        })
    }

    fn multiplicative(&mut self) -> Result<Node, SyntaxError> {
        let first = self.unary()?;
        self.chain(first, |p| {
            let op = match p.peek().kind {
                TokenKind::Punct(Punct::Star) => BinOp::Mul,
                TokenKind::Punct(Punct::Slash) => BinOp::Div,
                TokenKind::Punct(Punct::Percent) => BinOp::Rem,
                _ => return Ok(None),
            };
            p.pos += 1;
            Ok(Some(Link::Op(op, p.unary()?)))
        })
    }

    /// A left-associative level: `first`, then each operator with its right side that
    /// `next` reads, kept as one list (see [`Node::Chain`]); `next` answers `None` at the
    /// end of the level.
    fn chain(
        &mut self,
        first: Node,
        mut next: impl FnMut(&mut Self) -> Result<Option<Link>, SyntaxError>,
    ) -> Result<Node, SyntaxError> {
        let mut links = Vec::new();
        loop {
            let Some(link) = next(self)? else {
                break;
            };
            links.push(link);
        }
        if links.is_empty() {
            return Ok(first);
        }
        Ok(Node::Chain(Box::new(first), links))
    }

    fn unary(&mut self) -> Result<Node, SyntaxError> {
        let op = match self.peek().kind {
            TokenKind::Punct(Punct::Minus) => UnOp::Neg,
            TokenKind::Punct(Punct::Bang) => UnOp::Not,
            _ => return self.power(),
        };
        let at = self.bump().start;
        self.nest(at)?;
        let operand = self.unary()?;
        self.depth -= 1;
        Ok(Node::Unary(op, Box::new(operand)))
    }

    /// `a ** b`: right-associative; the exponent may carry a sign (`2 ** -1`).
    fn power(&mut self) -> Result<Node, SyntaxError> {
        let base = self.primary()?;
        if self.eat(Punct::StarStar) {
            self.nest(self.peek().start)?;
            let exp = self.unary()?;
            self.depth -= 1;
            return Ok(Node::Binary(BinOp::Pow, Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Node, SyntaxError> {
        let t = self.bump();
        self.term(t.start)?;
        match &t.kind {
            TokenKind::Literal(v) => Ok(Node::Literal(v.clone())),
            TokenKind::Path(src) => Ok(Node::Path(Box::new(Path::compile(src, t.start)?))),
            TokenKind::Punct(Punct::LParen) => {
                let inner = self.expr()?;
                self.expect(Punct::RParen, "to close '('")?;
                Ok(inner)
            }
            TokenKind::Punct(Punct::LBracket) => self.array(t.start),
            TokenKind::Ident(name) => self.call(name, t),
            _ => Err(SyntaxError::new(
                t.start,
                format!("expected a value, found {}", t.describe(self.src)),
            )),
        }
    }

    /// `[a, b, ...]`; an array of literals becomes one literal.
    fn array(&mut self, at: usize) -> Result<Node, SyntaxError> {
        self.nest(at)?;
        let mut items = Vec::new();
        if !self.eat(Punct::RBracket) {
            loop {
                items.push(self.expr()?);
                if self.eat(Punct::RBracket) {
                    break;
                }
                self.expect(Punct::Comma, "or ']' in the array")?;
            }
        }
        self.depth -= 1;
        if items.iter().all(|n| matches!(n, Node::Literal(_))) {
            let values = items
                .into_iter()
                .map(|n| match n {
                    Node::Literal(v) => v,
                    _ => serde_json::Value::Null,
                })
                .collect();
            return Ok(Node::Literal(serde_json::Value::Array(values)));
        }
        Ok(Node::Array(items))
    }

    /// A name: a named constant (`pi`), or a function call (`sin(x)`).
    fn call(&mut self, name: &str, t: &Token) -> Result<Node, SyntaxError> {
        let is_call = self.peek().kind == TokenKind::Punct(Punct::LParen);
        if !is_call && let Some(c) = crate::math::constant(name) {
            return Ok(Node::Literal(crate::value::float(c).unwrap_or(serde_json::Value::Null)));
        }
        let Some(func) = Func::lookup(name) else {
            let what = if is_call { "function" } else { "name" };
            let message = match keyword_hint(name).filter(|_| !is_call) {
                Some(right) => format!("unknown {what} '{name}' (did you mean '{right}'?)"),
                None if is_call => format!("unknown function '{name}'"),
                None => format!("unknown name '{name}' (paths start with '$', strings need quotes)"),
            };
            return Err(SyntaxError::new(t.start, message));
        };
        self.expect(Punct::LParen, &format!("after function name '{name}'"))?;
        self.nest(t.start)?;
        let mut args = Vec::new();
        if !self.eat(Punct::RParen) {
            loop {
                args.push(self.expr()?);
                if self.eat(Punct::RParen) {
                    break;
                }
                self.expect(Punct::Comma, "or ')' in the argument list")?;
            }
        }
        self.depth -= 1;
        func.check_arity(args.len())
            .map_err(|message| SyntaxError::new(t.start, message))?;
        Ok(Node::Call(func, args))
    }
}

/// Function and constant names fold case, as in the Go SDK's evaluator; the keywords
/// do not: the keyword `name` misspells by its case.
fn keyword_hint(name: &str) -> Option<&'static str> {
    ["true", "false", "null"]
        .into_iter()
        .find(|k| k.eq_ignore_ascii_case(name) && *k != name)
}

/// Regex errors span several lines; keep the last, most specific one.
fn one_line(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(&text)
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> SyntaxError {
        match parse(src, 0, Mode::Bare) {
            Ok((n, _)) => panic!("expected an error, got {n:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn syntax_errors() {
        let cases = [
            ("", 0, "empty expression"),
            ("1 +", 3, "expected a value, found end of expression"),
            ("1 + * 2", 4, "expected a value, found '*'"),
            ("(1 + 2", 6, "expected ')' to close '(', found end of expression"),
            ("1 2", 2, "unexpected '2' after a complete expression"),
            (
                "true ? 1",
                8,
                "expected ':' in 'condition ? a : b', found end of expression",
            ),
            ("foo(1)", 0, "unknown function 'foo'"),
            (
                "foo",
                0,
                "unknown name 'foo' (paths start with '$', strings need quotes)",
            ),
            (
                "upper",
                5,
                "expected '(' after function name 'upper', found end of expression",
            ),
            ("upper(1, 2)", 0, "function 'upper' takes 1 argument, got 2"),
            ("pi(1)", 0, "unknown function 'pi'"),
            ("True", 0, "unknown name 'True' (did you mean 'true'?)"),
            ("upper(1 2)", 8, "expected ',' or ')' in the argument list, found '2'"),
            ("[1, 2", 5, "expected ',' or ']' in the array, found end of expression"),
            ("[1,]", 3, "expected a value, found ']'"),
            (
                "'a' =~ 1",
                7,
                "the right side of '=~' must be a string (a regular expression), found number",
            ),
        ];
        for (src, at, message) in cases {
            assert_eq!(err(src), SyntaxError::new(at, message), "{src}");
        }
    }

    #[test]
    fn invalid_regex_is_a_compile_error() {
        let e = err("'a' =~ '('");
        assert_eq!(e.at, 7);
        assert_eq!(e.message, "invalid regular expression: error: unclosed group");
    }

    #[test]
    fn nesting_is_limited() {
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert_eq!(err(&deep).message, "expression nests deeper than 64 levels");
        let negs = format!("{}1", "-".repeat(100));
        assert_eq!(err(&negs).message, "expression nests deeper than 64 levels");
        let ok = format!("{}1{}", "(".repeat(30), ")".repeat(30));
        assert!(parse(&ok, 0, Mode::Bare).is_ok());
    }
}
