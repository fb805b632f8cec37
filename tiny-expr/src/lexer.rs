//! Turns the text of one expression into tokens.
//!
//! The lexer works on a whole configuration string and starts at a byte offset, so every
//! token keeps its position in that string for error messages. In template mode it stops
//! at the `}}` that closes the expression; `}}` inside a string literal or a JSONPath
//! bracket does not count.

use serde_json::{Number, Value};

use crate::error::SyntaxError;

/// An operator or punctuation token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Punct {
    OrOr,
    AndAnd,
    EqEq,
    NotEq,
    Match,
    Lt,
    Le,
    Gt,
    Ge,
    Plus,
    Minus,
    Star,
    StarStar,
    Slash,
    Percent,
    Bang,
    Question,
    QuestionQuestion,
    Colon,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
}

impl Punct {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Punct::OrOr => "||",
            Punct::AndAnd => "&&",
            Punct::EqEq => "==",
            Punct::NotEq => "!=",
            Punct::Match => "=~",
            Punct::Lt => "<",
            Punct::Le => "<=",
            Punct::Gt => ">",
            Punct::Ge => ">=",
            Punct::Plus => "+",
            Punct::Minus => "-",
            Punct::Star => "*",
            Punct::StarStar => "**",
            Punct::Slash => "/",
            Punct::Percent => "%",
            Punct::Bang => "!",
            Punct::Question => "?",
            Punct::QuestionQuestion => "??",
            Punct::Colon => ":",
            Punct::LParen => "(",
            Punct::RParen => ")",
            Punct::LBracket => "[",
            Punct::RBracket => "]",
            Punct::Comma => ",",
        }
    }
}

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind {
    /// A literal: number, string, `true`, `false` or `null`.
    Literal(Value),
    /// A name, such as a function name.
    Ident(String),
    /// The source text of a JSONPath starting with `$`.
    Path(String),
    Punct(Punct),
    /// End of the expression: `}}` in a template, end of input otherwise.
    End,
}

/// A token and where it is (byte offsets into the lexed string).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) kind: TokenKind,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Token {
    /// How the token reads in an error message, e.g. `'*'` or `end of expression`.
    pub(crate) fn describe(&self, src: &str) -> String {
        match &self.kind {
            TokenKind::End => "end of expression".to_owned(),
            _ => format!("'{}'", src.get(self.start..self.end).unwrap_or("?")),
        }
    }
}

/// Where the expression ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The expression is the whole input.
    Bare,
    /// The expression follows a `{{` at the given byte offset and ends at `}}`.
    Template { open: usize },
}

/// Lexes `src` from byte `start`. Returns the tokens (the last is [`TokenKind::End`]) and
/// the byte offset just after the expression (after `}}` in template mode).
pub(crate) fn tokenize(src: &str, start: usize, mode: Mode) -> Result<(Vec<Token>, usize), SyntaxError> {
    let mut lx = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: start,
    };
    let mut tokens = Vec::new();
    loop {
        lx.skip_whitespace();
        let start = lx.pos;
        let Some(&b) = lx.bytes.get(lx.pos) else {
            return match mode {
                Mode::Bare => {
                    tokens.push(Token {
                        kind: TokenKind::End,
                        start,
                        end: start,
                    });
                    Ok((tokens, start))
                }
                Mode::Template { open } => Err(SyntaxError::new(open, "'{{' is never closed: missing '}}'")),
            };
        };
        if b == b'}' && matches!(mode, Mode::Template { .. }) && lx.peek_at(1) == Some(b'}') {
            tokens.push(Token {
                kind: TokenKind::End,
                start,
                end: start + 2,
            });
            return Ok((tokens, start + 2));
        }
        let kind = lx.token(b)?;
        tokens.push(Token {
            kind,
            start,
            end: lx.pos,
        });
    }
}

struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn current_char(&self) -> Option<char> {
        self.src.get(self.pos..).and_then(|s| s.chars().next())
    }

    fn skip_whitespace(&mut self) {
        while let Some(c) = self.current_char() {
            if !c.is_whitespace() {
                break;
            }
            self.pos += c.len_utf8();
        }
    }

    fn punct(&mut self, p: Punct) -> Result<TokenKind, SyntaxError> {
        self.pos += p.as_str().len();
        Ok(TokenKind::Punct(p))
    }

    fn token(&mut self, b: u8) -> Result<TokenKind, SyntaxError> {
        let next = self.peek_at(1);
        match b {
            b'$' => self.path(),
            b'"' | b'\'' => self.string(b),
            b'0'..=b'9' => self.number(),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => Ok(self.ident()),
            b'|' if next == Some(b'|') => self.punct(Punct::OrOr),
            b'&' if next == Some(b'&') => self.punct(Punct::AndAnd),
            b'=' if next == Some(b'=') => self.punct(Punct::EqEq),
            b'=' if next == Some(b'~') => self.punct(Punct::Match),
            b'!' if next == Some(b'=') => self.punct(Punct::NotEq),
            b'!' => self.punct(Punct::Bang),
            b'<' if next == Some(b'=') => self.punct(Punct::Le),
            b'<' => self.punct(Punct::Lt),
            b'>' if next == Some(b'=') => self.punct(Punct::Ge),
            b'>' => self.punct(Punct::Gt),
            b'+' => self.punct(Punct::Plus),
            b'-' => self.punct(Punct::Minus),
            b'*' if next == Some(b'*') => self.punct(Punct::StarStar),
            b'*' => self.punct(Punct::Star),
            b'/' => self.punct(Punct::Slash),
            b'%' => self.punct(Punct::Percent),
            b'?' if next == Some(b'?') => self.punct(Punct::QuestionQuestion),
            b'?' => self.punct(Punct::Question),
            b':' => self.punct(Punct::Colon),
            b'(' => self.punct(Punct::LParen),
            b')' => self.punct(Punct::RParen),
            b',' => self.punct(Punct::Comma),
            b'=' => Err(SyntaxError::new(self.pos, "unexpected '=' (use '==' to compare)")),
            b'|' => Err(SyntaxError::new(self.pos, "unexpected '|' (did you mean '||'?)")),
            b'&' => Err(SyntaxError::new(self.pos, "unexpected '&' (did you mean '&&'?)")),
            b'[' => self.punct(Punct::LBracket),
            b']' => self.punct(Punct::RBracket),
            b'{' => Err(SyntaxError::new(
                self.pos,
                "unexpected '{': there are no object literals",
            )),
            b'@' => Err(SyntaxError::new(
                self.pos,
                "'@' is only valid inside a JSONPath filter; paths start with '$'",
            )),
            _ => {
                let c = self.current_char().unwrap_or('?');
                Err(SyntaxError::new(self.pos, format!("unexpected character '{c}'")))
            }
        }
    }

    fn ident(&mut self) -> TokenKind {
        let start = self.pos;
        while matches!(self.peek_at(0), Some(b) if b.is_ascii_alphanumeric() || b == b'_') {
            self.pos += 1;
        }
        match &self.src[start..self.pos] {
            "true" => TokenKind::Literal(Value::Bool(true)),
            "false" => TokenKind::Literal(Value::Bool(false)),
            "null" => TokenKind::Literal(Value::Null),
            name => TokenKind::Ident(name.to_owned()),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek_at(0), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<TokenKind, SyntaxError> {
        let start = self.pos;
        self.digits();
        let mut integer = true;
        if self.peek_at(0) == Some(b'.') && matches!(self.peek_at(1), Some(b'0'..=b'9')) {
            integer = false;
            self.pos += 1;
            self.digits();
        }
        if matches!(self.peek_at(0), Some(b'e' | b'E')) {
            integer = false;
            self.pos += 1;
            if matches!(self.peek_at(0), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(SyntaxError::new(
                    self.pos,
                    "expected digits in the exponent of a number",
                ));
            }
        }
        if matches!(self.peek_at(0), Some(b) if b.is_ascii_alphabetic() || b == b'_') {
            return Err(SyntaxError::new(self.pos, "unexpected letter after a number"));
        }
        let text = &self.src[start..self.pos];
        if integer && let Ok(n) = text.parse::<u64>() {
            return Ok(TokenKind::Literal(Value::Number(Number::from(n))));
        }
        // Written floats are normalized like computed ones: `2e3` is the integer 2000.
        text.parse::<f64>()
            .ok()
            .and_then(|f| crate::value::float(f).ok())
            .map(TokenKind::Literal)
            .ok_or_else(|| SyntaxError::new(start, format!("number {text} is out of range")))
    }

    fn string(&mut self, quote: u8) -> Result<TokenKind, SyntaxError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.current_char() else {
                return Err(SyntaxError::new(open, "string literal is never closed"));
            };
            if c as u32 == u32::from(quote) {
                self.pos += 1;
                return Ok(TokenKind::Literal(Value::String(out)));
            }
            if c != '\\' {
                out.push(c);
                self.pos += c.len_utf8();
                continue;
            }
            let escape_at = self.pos;
            self.pos += 1;
            let Some(e) = self.current_char() else {
                return Err(SyntaxError::new(open, "string literal is never closed"));
            };
            self.pos += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                '0' => out.push('\0'),
                '\\' | '/' | '"' | '\'' => out.push(e),
                'u' => out.push(self.unicode_escape(escape_at)?),
                _ => {
                    return Err(SyntaxError::new(
                        escape_at,
                        format!("unknown escape '\\{e}' in string literal"),
                    ));
                }
            }
        }
    }

    fn hex4(&mut self, escape_at: usize) -> Result<u32, SyntaxError> {
        let text = self.src.get(self.pos..self.pos + 4).unwrap_or("");
        if text.len() != 4 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(SyntaxError::new(escape_at, "'\\u' must be followed by 4 hex digits"));
        }
        self.pos += 4;
        u32::from_str_radix(text, 16).map_err(|_| SyntaxError::new(escape_at, "'\\u' must be followed by 4 hex digits"))
    }

    fn unicode_escape(&mut self, escape_at: usize) -> Result<char, SyntaxError> {
        let hi = self.hex4(escape_at)?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            if self.peek_at(0) != Some(b'\\') || self.peek_at(1) != Some(b'u') {
                return Err(SyntaxError::new(escape_at, "unpaired surrogate in '\\u' escape"));
            }
            self.pos += 2;
            let lo = self.hex4(escape_at)?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(SyntaxError::new(escape_at, "unpaired surrogate in '\\u' escape"));
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        char::from_u32(code).ok_or_else(|| SyntaxError::new(escape_at, "unpaired surrogate in '\\u' escape"))
    }

    /// A JSONPath: `$` followed by `.name`, `.*`, `..name`, `..*`, `..[...]` and `[...]`
    /// segments with no whitespace between them. Brackets may hold anything (filters,
    /// quoted names) and are matched with quotes taken into account. The text is checked
    /// by the JSONPath parser afterwards.
    fn path(&mut self) -> Result<TokenKind, SyntaxError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek_at(0) {
                Some(b'.') => {
                    self.pos += 1;
                    if self.peek_at(0) == Some(b'.') {
                        self.pos += 1;
                        if self.peek_at(0) == Some(b'[') {
                            self.bracket()?;
                            continue;
                        }
                    }
                    if self.peek_at(0) == Some(b'*') {
                        self.pos += 1;
                    } else if !self.member_name() {
                        return Err(SyntaxError::new(
                            self.pos,
                            "expected a member name or '*' after '.' in a path \
                             (use $['name'] for other keys)",
                        ));
                    }
                }
                Some(b'[') => self.bracket()?,
                _ => break,
            }
        }
        Ok(TokenKind::Path(self.src[start..self.pos].to_owned()))
    }

    /// RFC 9535 `member-name-shorthand`: a letter, `_` or non-ASCII char, then also digits.
    fn member_name(&mut self) -> bool {
        let start = self.pos;
        while let Some(c) = self.current_char() {
            let ok = c.is_ascii_alphabetic() || c == '_' || !c.is_ascii() || (self.pos > start && c.is_ascii_digit());
            if !ok || c.is_whitespace() {
                break;
            }
            self.pos += c.len_utf8();
        }
        self.pos > start
    }

    /// Skips a `[...]` group, including nested brackets, parentheses and quoted strings.
    fn bracket(&mut self) -> Result<(), SyntaxError> {
        let open = self.pos;
        let mut depth = 0usize;
        let mut quote: Option<u8> = None;
        while let Some(b) = self.peek_at(0) {
            self.pos += 1;
            if let Some(q) = quote {
                if b == b'\\' {
                    self.pos += 1;
                } else if b == q {
                    quote = None;
                }
                continue;
            }
            match b {
                b'\'' | b'"' => quote = Some(b),
                b'[' | b'(' => depth += 1,
                b']' | b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return if b == b']' {
                            Ok(())
                        } else {
                            Err(SyntaxError::new(self.pos - 1, "unexpected ')' in a path bracket"))
                        };
                    }
                }
                _ => {}
            }
        }
        Err(SyntaxError::new(open, "'[' in a path is never closed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        match tokenize(src, 0, Mode::Bare) {
            Ok((tokens, _)) => tokens.into_iter().map(|t| t.kind).collect(),
            Err(e) => panic!("{e:?}"),
        }
    }

    fn err(src: &str) -> SyntaxError {
        match tokenize(src, 0, Mode::Bare) {
            Ok(t) => panic!("expected an error, got {t:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn operators_are_longest_match() {
        use Punct::*;
        let got = kinds("|| && == != =~ <= < >= > + - ** * / % ! ?? ? : ( ) [ ] ,");
        let want: Vec<TokenKind> = [
            OrOr,
            AndAnd,
            EqEq,
            NotEq,
            Match,
            Le,
            Lt,
            Ge,
            Gt,
            Plus,
            Minus,
            StarStar,
            Star,
            Slash,
            Percent,
            Bang,
            QuestionQuestion,
            Question,
            Colon,
            LParen,
            RParen,
            LBracket,
            RBracket,
            Comma,
        ]
        .into_iter()
        .map(TokenKind::Punct)
        .chain([TokenKind::End])
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn numbers() {
        assert_eq!(
            kinds("12 1.5 1e3 2E-2"),
            vec![
                TokenKind::Literal(serde_json::json!(12)),
                TokenKind::Literal(serde_json::json!(1.5)),
                TokenKind::Literal(serde_json::json!(1000)),
                TokenKind::Literal(serde_json::json!(0.02)),
                TokenKind::End
            ]
        );
        assert_eq!(err("1e").message, "expected digits in the exponent of a number");
        assert_eq!(err("12abc").message, "unexpected letter after a number");
        assert_eq!(err("1e999").message, "number 1e999 is out of range");
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(
            kinds(r#"'a"b' "c'd" "\n\t\\\"\u00e9\ud83d\ude00" 'it\'s'"#),
            vec![
                TokenKind::Literal("a\"b".into()),
                TokenKind::Literal("c'd".into()),
                TokenKind::Literal("\n\t\\\"é😀".into()),
                TokenKind::Literal("it's".into()),
                TokenKind::End
            ]
        );
        assert_eq!(err("'abc").message, "string literal is never closed");
        assert_eq!(
            err(r"'a\q'"),
            SyntaxError::new(2, "unknown escape '\\q' in string literal")
        );
        assert_eq!(err(r"'\u12'").message, "'\\u' must be followed by 4 hex digits");
        assert_eq!(err(r"'\ud83d'").message, "unpaired surrogate in '\\u' escape");
    }

    #[test]
    fn paths_stop_at_operators_and_whitespace() {
        assert_eq!(
            kinds("$.a.b+$['x y'][0]..c.*-$..[?@.v > 1]"),
            vec![
                TokenKind::Path("$.a.b".into()),
                TokenKind::Punct(Punct::Plus),
                TokenKind::Path("$['x y'][0]..c.*".into()),
                TokenKind::Punct(Punct::Minus),
                TokenKind::Path("$..[?@.v > 1]".into()),
                TokenKind::End
            ]
        );
        assert_eq!(
            kinds("$.é1 $"),
            vec![
                TokenKind::Path("$.é1".into()),
                TokenKind::Path("$".into()),
                TokenKind::End
            ]
        );
        assert_eq!(err("$.a[0").message, "'[' in a path is never closed");
        assert_eq!(err("$.a[0").at, 3);
        assert_eq!(err("$.1").at, 2);
    }

    #[test]
    fn template_mode_stops_at_closing_braces() {
        let src = "x {{ '}}' + $['}}'] }} y";
        let (tokens, end) = tokenize(src, 4, Mode::Template { open: 2 }).unwrap_or_default();
        assert_eq!(tokens.len(), 4);
        assert_eq!(&src[end..], " y");
        let e = tokenize("a {{ $.x ", 4, Mode::Template { open: 2 });
        assert_eq!(e, Err(SyntaxError::new(2, "'{{' is never closed: missing '}}'")));
    }

    #[test]
    fn stray_characters() {
        assert_eq!(err("a = b").message, "unexpected '=' (use '==' to compare)");
        assert_eq!(err("a | b").message, "unexpected '|' (did you mean '||'?)");
        assert_eq!(err("1 # 2"), SyntaxError::new(2, "unexpected character '#'"));
        assert_eq!(err("{}").message, "unexpected '{': there are no object literals");
        assert_eq!(
            err("@.a").message,
            "'@' is only valid inside a JSONPath filter; paths start with '$'"
        );
    }
}
