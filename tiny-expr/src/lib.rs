//! Compiled JSON templates with `{{...}}` expressions, for edge configurations.
//!
//! An edge configuration is a JSON document whose strings may hold `{{...}}` expressions
//! evaluated against the incoming message as `$`. [`Template::compile`] parses the whole
//! document once, when a node is loaded; [`Template::render`] then evaluates it per
//! message without parsing anything. [`Expr`] is a single expression on its own.
//!
//! ```
//! use serde_json::json;
//! use tiny_expr::Template;
//!
//! let t = Template::compile(&json!({
//!     "to": "{{ $.user.email }}",
//!     "subject": "Order {{$.order.id}} for {{$.user.name}}",
//!     "urgent": "{{ $.order.total > 1000 }}",
//!     "note": "{{ $.order.note ?? 'none' }}"
//! }))?;
//! let out = t.render(&json!({
//!     "user": {"name": "Ann", "email": "ann@example.com"},
//!     "order": {"id": 42, "total": 1200}
//! }))?;
//! assert_eq!(out, json!({
//!     "to": "ann@example.com",
//!     "subject": "Order 42 for Ann",
//!     "urgent": true,
//!     "note": "none"
//! }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The expression language
//!
//! **Values.** Numbers (`3`, `-1.5`, `2e3`), strings in single or double quotes with
//! JSON-style escapes (`\n`, `\t`, `\\`, `\'`, `\"`, `\uXXXX`), `true`, `false`, `null`,
//! and arrays `[1, $.a, 'x']` (handy as a default: `$.tags ?? []`). There are no object
//! literals. The constants of the Go SDK's evaluator are numbers too: `e`, `pi`, `phi`,
//! `sqrt2`, `sqrte`, `sqrtpi`, `sqrtphi`, `ln2`, `log2e`, `ln10`, `log10e`.
//!
//! **Paths.** JSONPath as in RFC 9535 (through `jsonpath-rust`): `$`, `$.a.b`,
//! `$.items[0].x`, `$.items[-1]`, `$['a b']`, `$.items[*].id`, `$..id`,
//! `$.items[?@.price > 10]`, `$.items[1:3]`. A path has no spaces outside its brackets
//! (`$.a + 1` is a path plus one). A path that selects one node yields that node; several
//! nodes yield an array of them (so `$.items[*]` over a one-element array yields the
//! element itself); **no node is an error**, except where the Go SDK's evaluator (ajson)
//! has an answer for its missing value: on the left of `??`; on either side of `==`,
//! `!=`, `<`, `<=`, `>`, `>=` (the comparison is false, `!=` too); as an operand of
//! `&&`, `||`, `!`, `not(...)` or a condition (it is falsy); in `length` and `size` (0).
//! So `{{$.error ? 'failed' : 'ok'}}` on a message without `error` is `"ok"`. Inside a
//! longer string, [`Template::render_lenient`] writes nothing for it, as Go does.
//!
//! **Operators**, loosest first:
//!
//! | operators | meaning |
//! |---|---|
//! | `c ? a : b` | `a` if `c` is truthy, else `b` (right-associative) |
//! | `a ?? b` | `b` when `a` is null or a path in `a` matched nothing |
//! | `a \|\| b` | either is truthy (short-circuit; yields a boolean) |
//! | `a && b` | both are truthy (short-circuit; yields a boolean) |
//! | `==` `!=` | deep equality; numbers by value (`1 == 1.0`) |
//! | `s =~ re` | the regular expression `re` matches somewhere in string `s` (Rust `regex` syntax; a literal pattern is compiled once) |
//! | `<` `<=` `>` `>=` | numbers numerically, strings by code point; false for two different types (as ajson); two booleans, nulls, arrays or objects are an error |
//! | `+` | adds numbers; concatenates if either side is a string; time arithmetic (below) |
//! | `-` | subtracts numbers; time arithmetic (below) |
//! | `*` `/` `%` | numbers; dividing by zero is an error |
//! | `-x` `!x` | negation, logical not |
//! | `a ** b` | power (right-associative; `-2 ** 2` is `-4`) |
//!
//! **Time arithmetic**, as in the Go SDK: `+` and `-` on two strings that are an RFC 3339
//! time and a Go duration give a time, and on two durations give seconds:
//! `'2024-01-01T00:00:00Z' + '1h30m'` is `"2024-01-01T01:30:00Z"`, `'1h' - '30m'` is
//! `"1800s"`. Durations are Go's (`1.5h`, `300ms`, `-2m`, `1us` or `1µs`, `10ns`, `0`); a
//! time keeps its offset (`+02:00`; a zero offset is written `Z`) and loses any fraction of
//! a second; seconds are printed as Go's `%v` prints them (`3.6e+06s`). A duration on the
//! left of `-` is subtracted from the time on the right, as in Go. Other strings
//! concatenate with `+`, and are an error with `-`.
//!
//! `false`, `null`, `0`, `""`, `[]` and `{}` are falsy; everything else is truthy. Integer arithmetic is exact; a computed whole number that a double holds
//! exactly comes out as a JSON integer (`7 / 2` is `3.5`, `6 / 2` is `3`).
//!
//! **Functions** (names and constants fold case, as in Go: `SIN(x)` is `sin(x)`, `PI`
//! is `pi`; the keywords `true`, `false` and `null` do not; a wrong number of arguments is a compile
//! error, a wrong argument type an evaluation error):
//!
//! | function | result |
//! |---|---|
//! | `length(x)`, `size(x)` | chars of a string, elements of an array, keys of an object |
//! | `upper(s)`, `lower(s)`, `trim(s)` | case mapping, whitespace trimmed |
//! | `split(s, sep)` | array of parts (`sep` `""` splits into chars) |
//! | `join(arr, sep)` | elements in their interpolation form, joined |
//! | `contains(x, y)` | substring of a string, element of an array (deep equality), key of an object |
//! | `replace(s, old, new)` | every occurrence replaced |
//! | `substr(s, start[, len])` | chars `start..start+len` (clamped) |
//! | `index(x, y)` | char position of `y` in string `x`, or element position in array `x`; `-1` if absent |
//! | `hasprefix(s, p)`, `hassuffix(s, p)` | booleans |
//! | `reverse(x)` | string or array reversed |
//! | `string(x)` | the interpolation form of `x` |
//! | `number(x)` | a number parsed from a string; `true`/`false` are 1/0 |
//! | `now()`, `now(x)` | current Unix time in whole seconds (`x` is ignored; the Go SDK needs it) |
//! | `RFC3339(secs)` | Unix seconds as `2024-01-02T03:04:05Z` (UTC, fraction dropped) |
//! | `b64encode(s)`, `b64decode(s)` | standard base64 with padding; bad input or non-UTF-8 output is an error |
//! | `b64encoden(s)` | base64 without padding |
//! | `abs`, `ceil`, `floor`, `round`, `sqrt`, `pow10` | numbers (`round` halves away from zero) |
//! | `trunc`, `roundtoeven` | toward zero; to the nearest, halves to even |
//! | `sin`, `cos`, `tan`, `asin`, `acos`, `atan`, `sinh`, `cosh`, `tanh`, `asinh`, `acosh`, `atanh` | trigonometric and hyperbolic functions and their inverses, in radians |
//! | `exp`, `exp2`, `expm1`, `log`, `log2`, `log10`, `log1p`, `logb`, `cbrt` | `logb` is the binary exponent (`logb(100)` is 6) |
//! | `erf`, `erfc`, `erfinv`, `erfcinv`, `gamma`, `j0`, `j1`, `y0`, `y1` | error function, gamma, Bessel functions |
//! | `factorial(n)` | `n!` for a whole `n` from 0 to 170 (exact up to 20!) |
//! | `rand(x)`, `randint(n)` | a random number in `[0, x)`; a random whole number in `0..n` (`n` ≥ 1) |
//! | `key(p)`, `parent(p)`, `root(p)` | where the node a path `p` selects sits in the message: its key in an object (null in an array), the node holding it (null for `$`), the whole message |
//! | `first(arr)`, `last(arr)` | an element, or null for an empty array |
//! | `sum(arr)`, `avg(arr)` | of numbers; `avg([])` is 0 |
//! | `not(x)` | `!x` |
//!
//! The math functions follow Go's `math` package to within a few units in the last place;
//! a result that is NaN or infinite (`log(0)`, `acos(2)`) is an error, since JSON cannot
//! hold it.
//!
//! `key`, `parent` and `root` look at how their argument is written: a path (also inside
//! `c ? a : b` or `a ?? b`) keeps the place of the node it selects, so `key($.user.name)` is
//! `"name"` and `parent($.items[?@.id == 7])` is the `items` array. A path selecting
//! several nodes, and any other argument (a literal, arithmetic, `first(...)`), is a value
//! of its own: no key, no parent, and its own root.
//!
//! # Templates
//!
//! See [`Template`] for how strings, escapes (`\{{`) and types are handled.
//!
//! # Errors
//!
//! [`CompileError`] and [`EvalError`] carry the JSON pointer of the field and the
//! expression, and print on one line, e.g.
//! `at /user/name, in "{{$.user.nmae}}": path $.user.nmae matched nothing ($.user has no key "nmae")`.
//!
//! # Differences from the Go SDK evaluator
//!
//! Only real ones: everything not listed gives Go's result.
//!
//! * `"{{$.a}} {{$.b}}"` is two interpolated expressions (Go reads it as one and fails).
//! * Strict rendering is an option: [`Template::render`] fails on the first expression
//!   that fails, where Go's evaluator (and [`Template::render_lenient`], which the flow
//!   engine uses unless a module runs with `--strict-expressions`) gives `null` for a
//!   whole-value expression and leaves the `{{...}}` text inside a longer string.
//! * Objects and arrays interpolate as compact JSON rather than Go's `map[...]` form.
//! * Adds `!`, `??`, array literals, `now()` without an argument, and `\{{`; the root
//!   may be any JSON value.
//! * A result that is not a finite number (`log(0)`, `sqrt(-1)`) is an error, since JSON
//!   cannot hold it (Go yields NaN or Inf). `factorial(21)` and above give the true value
//!   (Go's 64-bit product wraps around); `randint(0)` is an error (Go panics).
//! * Not supported: ajson's bitwise operators (`<<`, `>>`, `&`, `|`, `^`, `&^`), which
//!   fail to parse.
//! * `length` counts a string's characters and an object's keys (ajson: a string's bytes,
//!   and 1 for any object). Numbers interpolate in JSON form (`1234567`; Go's `%v` of
//!   the float gives `1.234567e+06`).
//! * `+` with a string on one side and a number on the other concatenates (the Go SDK's
//!   `+` fails unless both sides are strings or both numbers).
//! * The filters of paths are RFC 9535's: `[?@.ok]` keeps elements that *have* `ok`
//!   (ajson keeps those where it is truthy: write `[?@.ok == true]`). ajson's `$.a.0`
//!   and `[(@.length-1)]` do not parse: write `$.a[0]` and `[-1]`. (ajson's
//!   `$.items.length`, an array's size, works: a path ending in `.length` on an array
//!   is its length, unless the path is a query with wildcards or filters.)
//! * `string(x)` writes numbers in JSON form (`1234567`, where Go's
//!   `%v` gives `1.234567e+06`) and `null` as `""` (Go: `unknown`).

#![warn(missing_docs)]

mod ast;
mod duration;
mod error;
mod eval;
mod expr;
mod functions;
mod lexer;
pub mod limits;
mod math;
mod parser;
mod path;
mod place;
mod template;
mod time;
mod timecalc;
mod value;

pub use error::{CompileError, EvalError};
pub use expr::Expr;
pub use template::Template;
