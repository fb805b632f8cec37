//! What the comparison and the weighing say: a [`Change`] between two builds, a
//! [`Finding`] on a deployed node, and their [`Verdict`].

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::flow::PortAddress;

/// Whether a change stops the new build from accepting what the old one did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// What was accepted before may be refused, or lose data, now.
    Breaking,
    /// What was accepted before still is.
    Compatible,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Breaking => "breaking",
            Verdict::Compatible => "compatible",
        })
    }
}

/// What changed between two builds' schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// The component is gone.
    ComponentRemoved,
    /// The port is gone (or turned from input to output, or back).
    PortRemoved,
    /// A field of an input is gone (or renamed: the old name is gone).
    FieldRemoved,
    /// A key of `_settings` is gone.
    SettingsKeyRemoved,
    /// A field takes fewer types than before (`number` to `integer`, a nullable one
    /// made not nullable).
    TypeNarrowed,
    /// A field must now be written (a new required field, or an old one made required).
    MadeRequired,
    /// Values of an enumeration are gone.
    EnumValueRemoved,
    /// A literal value that fitted the old schema does not fit the new one.
    NoLongerFits,
    /// A component is new.
    ComponentAdded,
    /// A port is new.
    PortAdded,
    /// An optional field is new.
    FieldAdded,
    /// A required field is optional now.
    MadeOptional,
    /// A field takes more types than before.
    TypeWidened,
    /// An enumeration has new values.
    EnumValueAdded,
}

impl ChangeKind {
    /// A short name (`field-removed`), as `--output json` writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChangeKind::ComponentRemoved => "component-removed",
            ChangeKind::PortRemoved => "port-removed",
            ChangeKind::FieldRemoved => "field-removed",
            ChangeKind::SettingsKeyRemoved => "settings-key-removed",
            ChangeKind::TypeNarrowed => "type-narrowed",
            ChangeKind::MadeRequired => "made-required",
            ChangeKind::EnumValueRemoved => "enum-value-removed",
            ChangeKind::NoLongerFits => "no-longer-fits",
            ChangeKind::ComponentAdded => "component-added",
            ChangeKind::PortAdded => "port-added",
            ChangeKind::FieldAdded => "field-added",
            ChangeKind::MadeOptional => "made-optional",
            ChangeKind::TypeWidened => "type-widened",
            ChangeKind::EnumValueAdded => "enum-value-added",
        }
    }

    /// The verdict on an input whose schema changed so, before looking at what is
    /// deployed.
    pub const fn verdict(self) -> Verdict {
        match self {
            ChangeKind::ComponentRemoved
            | ChangeKind::PortRemoved
            | ChangeKind::FieldRemoved
            | ChangeKind::SettingsKeyRemoved
            | ChangeKind::TypeNarrowed
            | ChangeKind::MadeRequired
            | ChangeKind::EnumValueRemoved
            | ChangeKind::NoLongerFits => Verdict::Breaking,
            _ => Verdict::Compatible,
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference between two builds' components, found by [`schema_changes`](super::schema_changes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The component.
    pub component: String,
    /// The port, unless the whole component changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// `true` when the port is an output.
    pub output: bool,
    /// JSON pointer of the field in the port's messages (`/user/name`; `*` is every
    /// item of an array); `None` for the port itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What changed.
    pub kind: ChangeKind,
    /// For [`ChangeKind::EnumValueRemoved`], the values the new build takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
    /// For [`ChangeKind::TypeNarrowed`], the types the new build takes (`None`: any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<String>>,
    /// What changed, in words.
    pub message: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: component `{}`", self.kind.verdict(), self.component)?;
        if let Some(port) = &self.port {
            write!(f, ", port `{port}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": {} [{}]", self.message, self.kind)
    }
}

/// What a deployed edge or node setting meets in the new build, found by
/// [`check_upgrade`](super::check_upgrade). `Display` gives one line naming flow, node, edge, port and field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Breaking or compatible.
    pub verdict: Verdict,
    /// The flow the edge or node belongs to.
    pub flow: String,
    /// The node of this module whose port is concerned (an edge's target; for an
    /// output, the edge's source).
    pub node: String,
    /// The edge's id, when an edge is concerned (not a node's own settings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    /// The edge's source, `<node>:<port>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The edge's target, `<node>:<port>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The port of `node`.
    pub port: String,
    /// JSON pointer of the field concerned, in the port's messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The change behind it.
    pub kind: ChangeKind,
    /// What happens to the deployed configuration, in words.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: flow `{}`, node `{}`", self.verdict, self.flow, self.node)?;
        if let Some(edge) = &self.edge {
            write!(f, ", edge `{edge}`")?;
            // An edge into the node names its source; one out of it, its target.
            let outgoing = |from: &str| PortAddress::parse(from).is_ok_and(|a| a.node == self.node);
            match (&self.from, &self.to) {
                (Some(from), _) if !outgoing(from) => write!(f, " from `{from}`")?,
                (_, Some(to)) => write!(f, " to `{to}`")?,
                _ => {}
            }
        }
        write!(f, ", port `{}`", self.port)?;
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": {} [{}]", self.message, self.kind)
    }
}
