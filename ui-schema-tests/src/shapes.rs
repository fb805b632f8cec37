//! Message shapes, one module each. The types are only reflected, never built, so
//! most fields are never read.
#![allow(dead_code, missing_debug_implementations)]

/// The Go SDK's Example 1 (reference §3.2).
pub mod go_example_1 {
    use tiny_sdk::prelude::*;

    #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
    pub struct Request {
        #[tiny(configurable, title = "Context")]
        #[serde(default)]
        pub context: serde_json::Value,
        #[tiny(title = "URL", format = "uri")]
        pub url: String,
        #[tiny(enum("GET", "POST"), enum_titles("Get", "Post"), default = "GET")]
        #[serde(default)]
        pub method: String,
        #[serde(default)]
        pub headers: Vec<Header>,
    }

    #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
    pub struct Header {
        pub key: String,
        pub value: String,
    }
}

/// `configurable` on a primitive, on `Value`, on a struct and on an array.
pub mod hint_configurable {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Configurable {
        #[tiny(configurable)]
        pub name: String,
        #[tiny(configurable)]
        pub context: serde_json::Value,
        #[tiny(configurable)]
        pub target: Target,
        #[tiny(configurable)]
        pub tags: Vec<String>,
        pub plain: Target,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Target {
        pub host: String,
        pub port: u16,
    }
}

/// `shared` on a primitive, on `Value` and on a struct.
pub mod hint_shared {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Shared {
        #[tiny(shared)]
        pub id: String,
        #[tiny(shared)]
        pub context: serde_json::Value,
        #[tiny(shared, title = "Result")]
        pub result: Outcome,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Outcome {
        pub ok: bool,
        pub body: String,
    }
}

/// `title` and `description` on a primitive (stay on the property) and on a struct
/// field (move to the definition).
pub mod hint_title_description {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    #[tiny(title = "Titled message", description = "The container's own hints.")]
    pub struct Titled {
        #[tiny(title = "Full name", description = "As on the passport.")]
        pub name: String,
        #[tiny(title = "Home", description = "Where they live.")]
        pub address: Address,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Address {
        pub city: String,
    }
}

/// `default` with every kind of JSON literal.
pub mod hint_default {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Defaults {
        #[tiny(default = "hello")]
        pub text: String,
        #[tiny(default = 42)]
        pub count: u32,
        #[tiny(default = -1.5)]
        pub offset: f64,
        #[tiny(default = true)]
        pub enabled: bool,
        #[tiny(default = null)]
        pub maybe: Option<String>,
        #[tiny(default = ["a", "b"])]
        pub list: Vec<String>,
    }
}

/// `enum` and `enum_titles` on strings and numbers, and `enum` without titles.
pub mod hint_enum {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Choices {
        #[tiny(enum("GET", "POST", "PUT"), enum_titles("Get", "Post", "Put"))]
        pub method: String,
        #[tiny(enum(1, 2, 3), enum_titles("One", "Two", "Three"))]
        pub level: u8,
        #[tiny(enum("a", "b"))]
        pub letter: String,
    }
}

/// `readonly` and `secret`.
pub mod hint_readonly_secret {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Credentials {
        #[tiny(readonly)]
        pub id: String,
        #[tiny(secret)]
        pub token: String,
        #[tiny(secret, format = "password")]
        pub password: String,
        #[tiny(readonly)]
        pub owner: Owner,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Owner {
        pub login: String,
    }
}

/// `format` on strings, numbers and booleans, and `language` with `format = "code"`.
pub mod hint_format {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Formats {
        #[tiny(format = "markdown")]
        pub notes: String,
        #[tiny(format = "textarea")]
        pub body: String,
        #[tiny(format = "code", language = "javascript")]
        pub script: String,
        #[tiny(format = "email")]
        pub email: String,
        #[tiny(format = "date-time")]
        pub at: String,
        #[tiny(format = "color")]
        pub color: String,
        #[tiny(format = "select", enum(1, 2))]
        pub choice: u8,
        #[tiny(format = "button")]
        pub send: bool,
    }
}

/// The layout hints: `tab`, `align` and `col_span` (both spellings).
pub mod hint_layout {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Layout {
        #[tiny(tab = "Main", col_span = 6)]
        pub first: String,
        #[tiny(tab = "Main", col_span = "col-span-6")]
        pub last: String,
        #[tiny(tab = "Advanced", align = "horizontal")]
        pub retries: u32,
        #[tiny(tab = "Advanced", col_span = 12)]
        pub extra: Extra,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Extra {
        pub note: String,
    }
}

/// `property_order` on some fields: the author's order wins over the declaration.
pub mod hint_property_order {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Ordered {
        #[tiny(property_order = 3)]
        pub c: String,
        #[tiny(property_order = 1)]
        pub a: String,
        pub b: String,
        #[tiny(property_order = 2)]
        pub nested: Inner,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Inner {
        pub x: i32,
    }
}

/// `required_when` and `optional_when` with each operator.
pub mod hint_conditions {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename_all = "camelCase")]
    pub struct Conditional {
        #[tiny(enum("none", "basic", "bearer"))]
        pub auth_mode: String,
        #[tiny(required_when("authMode", "===", "basic"))]
        #[serde(default)]
        pub user_name: String,
        #[tiny(required_when("authMode", "in", ["basic", "bearer"]), secret)]
        #[serde(default)]
        pub secret: String,
        #[tiny(optional_when("authMode", "equal", "none"))]
        #[serde(default)]
        pub realm: String,
        #[tiny(optional_when("userName", "isUndefined"))]
        #[serde(default)]
        pub hint: Option<String>,
        #[tiny(required_when("authMode", "===", "bearer"))]
        #[serde(default)]
        pub bearer: Option<Bearer>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Bearer {
        pub token: String,
    }
}

/// Structs in structs, three levels deep.
pub mod nested_structs {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Order {
        pub id: String,
        pub customer: Customer,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(deny_unknown_fields)]
    pub struct Customer {
        pub name: String,
        pub address: Address,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Address {
        pub street: String,
        pub zip: String,
    }
}

/// Arrays of structs, with a struct inside the element and an array of arrays.
pub mod array_of_structs {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Table {
        pub rows: Vec<Row>,
        pub grid: Vec<Vec<Cell>>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Row {
        pub id: u64,
        pub cells: Vec<Cell>,
        pub meta: Meta,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Cell {
        pub value: String,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Meta {
        pub hidden: bool,
    }
}

/// Arrays of primitives.
pub mod array_of_primitives {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Lists {
        /// Tags to attach.
        pub tags: Vec<String>,
        pub ids: Vec<i64>,
        pub weights: Vec<f64>,
        pub flags: Vec<bool>,
        #[tiny(title = "Fixed", default = ["x"])]
        pub fixed: Vec<String>,
    }
}

/// `Option` of primitives: not required, nullable.
pub mod option_primitives {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Optionals {
        pub name: Option<String>,
        pub count: Option<u32>,
        pub on: Option<bool>,
        #[tiny(title = "Ratio", default = 0.5)]
        pub ratio: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
        pub tags: Option<Vec<String>>,
    }
}

/// `Option` of structs, of a unit enum and of `Value`.
pub mod option_structs {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Patch {
        pub user: Option<User>,
        /// The user to fall back on.
        #[tiny(title = "Fallback")]
        pub fallback: Option<User>,
        pub level: Option<Level>,
        #[tiny(configurable)]
        pub extra: Option<serde_json::Value>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct User {
        pub name: String,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub enum Level {
        Low,
        High,
    }
}

/// A unit enum without any docs or titles, as a field and as the root.
pub mod unit_enum_plain {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Paint {
        pub color: Color,
        #[tiny(title = "Background", default = "blue")]
        pub background: Color,
        pub palette: Vec<Color>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename_all = "lowercase")]
    pub enum Color {
        Red,
        Green,
        Blue,
    }
}

/// A unit enum whose variants have titles and docs.
pub mod unit_enum_titled {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Job {
        pub priority: Priority,
    }

    /// How urgent a job is.
    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename_all = "snake_case")]
    pub enum Priority {
        #[tiny(title = "Low priority")]
        Low,
        /// Normal: the default.
        Normal,
        #[tiny(title = "Urgent!")]
        /// Drops everything else.
        Urgent,
        NoDocs,
    }
}

/// A unit enum as the root message.
pub mod unit_enum_root {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub enum Switch {
        On,
        Off,
    }
}

/// A data-carrying enum, externally tagged (serde's default).
pub mod enum_external {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Command {
        pub action: Action,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub enum Action {
        /// Stop now.
        Stop,
        Move {
            x: i32,
            y: i32,
        },
        Say(String),
        Point(Point),
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Point {
        pub x: i32,
        pub y: i32,
    }
}

/// A data-carrying enum, internally tagged.
pub mod enum_internal {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Event {
        pub id: String,
        pub kind: Kind,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(tag = "type", rename_all = "snake_case")]
    pub enum Kind {
        Created { by: String },
        Deleted,
        Moved(Place),
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Place {
        pub from: String,
        pub to: String,
    }
}

/// A data-carrying enum, adjacently tagged, as the root message.
pub mod enum_adjacent {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(tag = "t", content = "c")]
    pub enum Envelope {
        Text(String),
        Pair { a: u8, b: u8 },
        Empty,
    }
}

/// An untagged enum.
pub mod enum_untagged {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Input {
        pub value: Scalar,
        #[tiny(configurable)]
        pub other: Scalar,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(untagged)]
    pub enum Scalar {
        Number(f64),
        Text(String),
        Many(Vec<String>),
        Object { key: String },
    }
}

/// `HashMap` and `BTreeMap` fields.
pub mod maps {
    use std::collections::{BTreeMap, HashMap};

    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Maps {
        pub headers: HashMap<String, String>,
        pub limits: BTreeMap<String, u32>,
        pub services: BTreeMap<String, Service>,
        #[tiny(configurable, title = "Variables")]
        pub vars: HashMap<String, serde_json::Value>,
        pub groups: HashMap<String, Vec<String>>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Service {
        pub url: String,
    }
}

/// `serde_json::Value` fields: configurable, shared and plain.
pub mod values {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Values {
        /// Sent back with the answer.
        #[tiny(configurable)]
        #[serde(default)]
        pub context: serde_json::Value,
        #[tiny(configurable, title = "Body")]
        pub body: serde_json::Value,
        #[tiny(shared)]
        pub data: serde_json::Value,
        pub raw: serde_json::Value,
        pub object: serde_json::Map<String, serde_json::Value>,
        pub list: Vec<serde_json::Value>,
    }
}

/// `#[serde(rename)]` on fields, on variants and on the container.
pub mod serde_rename {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename = "Renamed")]
    pub struct Original {
        #[serde(rename = "userId")]
        pub user_id: String,
        #[serde(rename = "x-trace")]
        pub trace: String,
        #[serde(rename = "payload")]
        pub inner: Inner,
        pub mode: Mode,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename = "InnerRenamed")]
    pub struct Inner {
        #[serde(rename = "2fa")]
        pub two_factor: bool,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub enum Mode {
        #[serde(rename = "fast-mode")]
        Fast,
        #[serde(rename = "slow-mode")]
        Slow,
    }
}

/// `#[serde(rename_all)]` on structs and enums.
pub mod serde_rename_all {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename_all = "camelCase")]
    pub struct Settings {
        pub max_retries: u32,
        #[tiny(required_when("maxRetries", "===", 0))]
        pub retry_delay_ms: u64,
        pub log_level: LogLevel,
        pub sub_settings: SubSettings,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    pub enum LogLevel {
        DebugAll,
        InfoOnly,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(rename_all = "kebab-case")]
    pub struct SubSettings {
        pub time_zone: String,
    }
}

/// `#[serde(flatten)]` of a struct and of a map.
pub mod flatten {
    use std::collections::BTreeMap;

    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Message {
        pub id: String,
        #[serde(flatten)]
        pub common: Common,
        pub body: String,
        #[serde(flatten)]
        pub rest: BTreeMap<String, serde_json::Value>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Common {
        /// When it was sent.
        #[tiny(format = "date-time")]
        pub sent_at: String,
        #[tiny(configurable)]
        pub context: serde_json::Value,
        pub origin: Origin,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Origin {
        pub host: String,
    }
}

/// `#[serde(default)]` on the container: nothing is required, and the defaults are
/// those of `Default`.
pub mod container_default {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(default)]
    pub struct Config {
        pub host: String,
        pub port: u16,
        pub tls: bool,
        pub inner: Limits,
        pub tags: Vec<String>,
    }

    impl Default for Config {
        fn default() -> Self {
            Self {
                host: "localhost".into(),
                port: 8080,
                tls: false,
                inner: Limits::default(),
                tags: vec!["a".into()],
            }
        }
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Limits {
        pub max: u32,
    }

    impl Default for Limits {
        fn default() -> Self {
            Self { max: 10 }
        }
    }
}

/// `#[serde(default)]` and `#[serde(default = "...")]` on fields.
pub mod field_default {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Fields {
        pub required: String,
        #[serde(default)]
        pub plain_default: u32,
        #[serde(default = "five")]
        pub function_default: u32,
        #[serde(default = "five")]
        #[tiny(default = 7)]
        pub hint_wins: u32,
        #[serde(default)]
        pub inner: Inner,
    }

    fn five() -> u32 {
        5
    }

    #[derive(Default, Serialize, Deserialize, Schema)]
    pub struct Inner {
        pub n: u32,
    }
}

/// Doc comments become descriptions: of the message, of fields, of nested types.
pub mod doc_comments {
    use tiny_sdk::prelude::*;

    /// A documented message.
    ///
    /// Its second paragraph.
    #[derive(Serialize, Deserialize, Schema)]
    pub struct Documented {
        /// The name.
        pub name: String,
        /// A field whose doc
        /// spans two lines.
        pub multi: String,
        /// The doc of the field, which wins over the type's.
        pub inner: Inner,
        pub undocumented_field: Inner,
        /// Docs, but the hint wins.
        #[tiny(description = "From the hint.")]
        pub hinted: String,
    }

    /// The doc of the type.
    #[derive(Serialize, Deserialize, Schema)]
    pub struct Inner {
        /// Deep.
        pub deep: bool,
    }
}

/// A recursive type: a tree of nodes.
pub mod recursive_tree {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Tree {
        pub label: String,
        pub children: Vec<Tree>,
        /// Hints on a recursive reference stay next to it.
        #[tiny(title = "Parent")]
        pub parent: Option<Box<Tree>>,
        pub first: Option<Box<Leaf>>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Leaf {
        pub value: String,
        pub back: Option<Box<Tree>>,
    }
}

/// The same struct in two fields, once plain and once configurable, and in an array.
pub mod same_struct_twice {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Transfer {
        pub from: Account,
        pub to: Account,
        #[tiny(configurable)]
        pub fee_payer: Account,
        pub others: Vec<Account>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Account {
        pub iban: String,
    }
}

/// Newtype structs: of a primitive, of a struct, and as the root.
pub mod newtype {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Contact {
        pub email: Email,
        #[tiny(title = "Backup email")]
        pub backup: Email,
        pub wrapped: Wrapped,
        pub emails: Vec<Email>,
    }

    /// An e-mail address.
    #[derive(Serialize, Deserialize, Schema)]
    pub struct Email(pub String);

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Wrapped(pub Inner);

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Inner {
        pub v: u8,
    }
}

/// A newtype struct as the root message.
pub mod newtype_root {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Token(#[tiny(format = "password", secret)] pub String);
}

/// A tuple struct.
pub mod tuple_struct {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Segment {
        pub ends: Pair,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Pair(pub f64, pub f64);
}

/// `skip`, `skip_serializing`, `skip_deserializing` and `skip_serializing_if`.
pub mod skip {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Skips {
        pub kept: String,
        #[serde(skip)]
        pub cache: Vec<u8>,
        #[serde(skip_serializing)]
        pub write_only: String,
        #[serde(skip_deserializing)]
        pub read_only: String,
        #[serde(skip_serializing_if = "String::is_empty")]
        pub sometimes: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub list: Vec<String>,
        pub last: bool,
    }
}

/// Numbers of every width, and chars.
pub mod primitives {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Primitives {
        pub i8: i8,
        pub u16: u16,
        pub i64: i64,
        pub u64: u64,
        pub usize: usize,
        pub f32: f32,
        pub f64: f64,
        pub c: char,
        pub b: bool,
        pub s: String,
        pub unit: (),
    }
}

/// Two different types with the same name, from two modules.
pub mod name_clash {
    use tiny_sdk::prelude::*;

    pub mod a {
        use tiny_sdk::prelude::*;

        #[derive(Serialize, Deserialize, Schema)]
        pub struct Item {
            pub a: String,
        }
    }

    pub mod b {
        use tiny_sdk::prelude::*;

        #[derive(Serialize, Deserialize, Schema)]
        pub struct Item {
            pub b: u8,
        }
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Both {
        pub first: a::Item,
        pub second: b::Item,
        pub items: Vec<a::Item>,
    }
}

/// Fields named like JSON Schema keywords, and keys that are not identifiers.
pub mod keyword_names {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Keywords {
        #[serde(rename = "$ref")]
        pub reference: String,
        pub properties: Props,
        #[serde(rename = "type")]
        pub kind: String,
        #[serde(rename = "a b")]
        pub spaced: Props,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Props {
        pub items: Vec<String>,
    }
}

/// Maps keyed by a unit enum and by integers.
pub mod map_keys {
    use std::collections::{BTreeMap, HashMap};

    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Keyed {
        pub by_region: HashMap<Region, String>,
        pub by_id: BTreeMap<u32, Node>,
    }

    #[derive(Serialize, Deserialize, Schema, PartialEq, Eq, Hash)]
    pub enum Region {
        Eu,
        Us,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Node {
        pub name: String,
    }
}

/// Tuples: positions that hold structs get definitions like map values.
pub mod tuples {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Tuples {
        pub pair: (Point, String),
        pub points: Vec<(f64, f64)>,
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Point {
        pub x: f64,
        pub y: f64,
    }
}

/// A recursive enum: an expression tree.
pub mod recursive_enum {
    use tiny_sdk::prelude::*;

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Formula {
        pub name: String,
        pub expr: Expr,
    }

    #[derive(Serialize, Deserialize, Schema)]
    #[serde(tag = "op", rename_all = "lowercase")]
    pub enum Expr {
        Num { value: f64 },
        Neg { arg: Box<Expr> },
        Add { left: Box<Expr>, right: Box<Expr> },
        Call(Call),
    }

    #[derive(Serialize, Deserialize, Schema)]
    pub struct Call {
        pub function: String,
        pub args: Vec<Expr>,
    }
}

/// A message that is an `Option` of a struct: the root is the struct.
pub mod option_root {
    pub type Root = Option<super::nested_structs::Address>;
}
