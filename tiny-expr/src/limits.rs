//! The limits that keep one expression, or one message, from taking a module down: how
//! long an expression may be, how big a regular expression, and how much one render may
//! build. `docs/limits.md` lists them with the rest of tiny's limits.
//!
//! Nesting (64 levels of parentheses, calls and prefix operators) is the parser's; with
//! the operators of one level kept in a list, it bounds the height of every tree.

use std::cell::{Cell, RefCell};

use regex::{Regex, RegexBuilder};

use crate::error::Fault;

/// The longest expression, in bytes: the text between `{{` and `}}`, or what
/// [`Expr::parse`](crate::Expr::parse) is given.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024;

/// The most values (literals, paths, calls, arrays) one expression may hold.
pub const MAX_TERMS: usize = 10_000;

/// The most bytes one render may build: the strings that operators, functions and
/// interpolation make, the arrays they make, and the values copied out of the message
/// into the result. A value moved out of the message
/// ([`Template::render_taking`](crate::Template::render_taking)) costs nothing.
pub const MAX_RENDER_BYTES: usize = 64 * 1024 * 1024;

/// The most a regular expression may take once compiled (the `regex` crate's size limit;
/// its default is 10 MiB).
pub const MAX_REGEX_BYTES: usize = 1024 * 1024;

/// How many regular expressions built from message data (`$.s =~ $.pattern`) each thread
/// keeps compiled.
const REGEX_CACHE: usize = 16;

thread_local! {
    /// What the render under way on this thread may still build. Rendering never awaits,
    /// so a render starts and ends on one thread.
    static LEFT: Cell<usize> = const { Cell::new(MAX_RENDER_BYTES) };
    static REGEXES: RefCell<Vec<(String, Regex)>> = const { RefCell::new(Vec::new()) };
}

/// The budget of one render: [`MAX_RENDER_BYTES`] from its start, given back to whatever
/// ran before it when it ends.
pub(crate) struct Render {
    before: usize,
}

impl Render {
    pub(crate) fn begin() -> Render {
        Render {
            before: LEFT.replace(MAX_RENDER_BYTES),
        }
    }
}

impl Drop for Render {
    fn drop(&mut self) {
        LEFT.set(self.before);
    }
}

/// Takes `bytes` from the render's budget, or fails when it has less left.
pub(crate) fn charge(bytes: usize) -> Result<(), Fault> {
    let left = LEFT.get();
    if bytes > left {
        LEFT.set(0);
        return Err(Fault::other(format!(
            "the render would build more than {MAX_RENDER_BYTES} bytes (the limit for one message)"
        )));
    }
    LEFT.set(left - bytes);
    Ok(())
}

/// About how many bytes a copy of `v` takes, counted only up to `cap` (a value larger than
/// that answers more than `cap`, without the rest of it being walked).
pub(crate) fn weight(v: &serde_json::Value, cap: usize) -> usize {
    use serde_json::Value;
    const SLOT: usize = std::mem::size_of::<Value>();
    let mut total = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total += SLOT;
        match v {
            Value::String(s) => total += s.len(),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (k, item) in map {
                    total += k.len() + std::mem::size_of::<String>();
                    stack.push(item);
                }
            }
            _ => {}
        }
        if total > cap {
            break;
        }
    }
    total
}

/// Charges what a copy of `v` takes.
pub(crate) fn charge_copy(v: &serde_json::Value) -> Result<(), Fault> {
    let left = LEFT.get();
    charge(weight(v, left))
}

/// Compiles a regular expression within [`MAX_REGEX_BYTES`].
pub(crate) fn regex(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build()
}

/// [`regex`] for a pattern that came from message data: the last few are kept compiled,
/// so a flow matching against the same few patterns compiles each once.
pub(crate) fn cached_regex(pattern: &str) -> Result<Regex, regex::Error> {
    let hit = REGEXES.with_borrow_mut(|cache| {
        let i = cache.iter().position(|(p, _)| p == pattern)?;
        // Most recently used last.
        let entry = cache.remove(i);
        let re = entry.1.clone();
        cache.push(entry);
        Some(re)
    });
    if let Some(re) = hit {
        return Ok(re);
    }
    let re = regex(pattern)?;
    REGEXES.with_borrow_mut(|cache| {
        if cache.len() >= REGEX_CACHE {
            cache.remove(0);
        }
        cache.push((pattern.to_owned(), re.clone()));
    });
    Ok(re)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_render_starts_with_the_whole_budget_and_gives_back_the_outer_one() {
        let outer = Render::begin();
        assert!(charge(MAX_RENDER_BYTES - 10).is_ok());
        {
            let _inner = Render::begin();
            assert!(charge(MAX_RENDER_BYTES).is_ok());
            assert!(charge(1).is_err());
        }
        assert!(charge(10).is_ok());
        assert!(charge(1).is_err());
        drop(outer);
    }

    #[test]
    fn weight_counts_strings_and_stops_at_the_cap() {
        let v = json!({"a": "x".repeat(1000), "b": [1, 2, 3]});
        let w = weight(&v, usize::MAX);
        assert!(w > 1000 && w < 2000, "{w}");
        // The walk stops before the string once past the cap.
        assert!(weight(&v, 10) < 1000);
    }

    #[test]
    fn the_regex_cache_keeps_the_most_recent_patterns() {
        for i in 0..REGEX_CACHE + 4 {
            assert!(cached_regex(&format!("a{i}")).is_ok());
        }
        REGEXES.with_borrow(|c| {
            assert_eq!(c.len(), REGEX_CACHE);
            assert_eq!(
                c.last().map(|e| e.0.as_str()),
                Some(format!("a{}", REGEX_CACHE + 3).as_str())
            );
        });
        // A pattern whose compiled form is over the limit is refused, not built.
        assert!(regex(&"\\w{100}".repeat(200)).is_err());
    }
}
