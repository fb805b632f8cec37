//! `#[derive(Component)]`: the `#[component(...)]` and `#[port(...)]` attributes.

use darling::{Error, FromDeriveInput, FromField, FromMeta, Result, ast, util::Flag};
use syn::{Attribute, Expr, Ident, LitStr, Type};

use super::{doc_lines, doc_summary, unknown};

/// The container attributes, `#[component(...)]`.
#[derive(FromDeriveInput)]
#[darling(attributes(component), supports(struct_named, struct_unit), forward_attrs(doc))]
pub struct ComponentAttrs {
    pub ident: Ident,
    pub generics: syn::Generics,
    pub data: ast::Data<(), FieldAttrs>,
    pub attrs: Vec<Attribute>,
    /// Unique name within the module.
    pub name: Option<LitStr>,
    /// One line for the catalogue; defaults to the doc comment's first paragraph.
    pub description: Option<String>,
    /// Longer help; defaults to the rest of the doc comment.
    pub info: Option<String>,
    #[darling(default)]
    pub tags: Vec<LitStr>,
    /// The `_settings` message type.
    pub settings: Option<Type>,
    /// The `_control` message type.
    pub control: Option<Type>,
    /// The component implements `Hooks` itself.
    pub hooks: Flag,
}

/// A field's `#[port(...)]` attribute.
#[derive(FromField)]
#[darling(attributes(port), forward_attrs(doc))]
pub struct FieldAttrs {
    pub ident: Option<Ident>,
    pub ty: Type,
    pub attrs: Vec<Attribute>,
    pub label: Option<String>,
    pub position: Option<PositionArg>,
    pub handler: Option<Ident>,
    pub catch: Flag,
    /// Set by darling when `#[port]` is present at all.
    #[darling(skip)]
    pub has_port_attr: bool,
}

/// `position = Left`.
#[derive(Debug, Clone, Copy)]
pub struct PositionArg(pub &'static str);

const POSITIONS: [&str; 4] = ["Top", "Right", "Bottom", "Left"];

impl FromMeta for PositionArg {
    fn from_expr(expr: &Expr) -> Result<Self> {
        let name = match expr {
            Expr::Path(p) => p.path.get_ident().map(Ident::to_string),
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        };
        let Some(name) = name else {
            return Err(Error::custom("expected one of `Top`, `Right`, `Bottom`, `Left`").with_span(expr));
        };
        match POSITIONS.iter().find(|p| **p == name) {
            Some(p) => Ok(PositionArg(p)),
            None => Err(Error::custom(unknown("position", &name, &POSITIONS)).with_span(expr)),
        }
    }
}

/// Input or output, read from the field's type (`Input<T>`, `Output<T, R>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Input,
    Output,
}

/// A checked port.
pub struct Port {
    pub field: Ident,
    pub ty: Type,
    pub kind: Kind,
    pub name: String,
    pub label: String,
    pub description: String,
    pub position: &'static str,
    pub handler: Ident,
    pub catch: bool,
}

/// A field that is not a port: initialised with `Default::default()`.
pub struct Plain {
    pub field: Ident,
    pub ty: Type,
}

/// Everything the code generator needs, checked.
pub struct Component {
    pub ident: Ident,
    pub name: String,
    pub description: String,
    pub info: String,
    pub tags: Vec<String>,
    pub settings: Option<Type>,
    pub control: Option<Type>,
    pub hooks: bool,
    pub ports: Vec<Port>,
    pub plain: Vec<Plain>,
}

impl Component {
    /// Reads and checks the input, collecting every error rather than stopping at the
    /// first. Returns what could be read alongside the errors, for stub generation.
    pub fn from_input(input: &syn::DeriveInput) -> std::result::Result<Component, (Error, Option<StubInfo>)> {
        let attrs = ComponentAttrs::from_derive_input(input).map_err(|e| (e, None))?;
        let stub = StubInfo { settings: attrs.settings.clone(), hooks: attrs.hooks.is_present() };
        check(attrs, input).map_err(|e| (e, Some(stub)))
    }
}

/// What a stub impl needs after a failed check, so that the author's code using
/// `Ctx<Self>` still type-checks and only the real mistake is reported.
pub struct StubInfo {
    pub settings: Option<Type>,
    pub hooks: bool,
}

fn check(attrs: ComponentAttrs, input: &syn::DeriveInput) -> Result<Component> {
    let mut errors = Error::accumulator();
    if !attrs.generics.params.is_empty() {
        errors.push(Error::custom("a component cannot be generic: the engine creates it by name").with_span(&attrs.generics));
    }
    let name = match &attrs.name {
        Some(n) if n.value().trim().is_empty() => {
            errors.push(Error::custom("the component name must not be empty").with_span(n));
            String::new()
        }
        Some(n) if !n.value().chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') => {
            errors.push(
                Error::custom("a component name may hold only ASCII letters, digits, `_` and `-` (it becomes part of node names)")
                    .with_span(n),
            );
            String::new()
        }
        Some(n) => n.value(),
        None => {
            errors.push(
                Error::custom("missing `#[component(name = \"...\")]`: every component needs a name unique in its module")
                    .with_span(&input.ident),
            );
            String::new()
        }
    };
    let docs = doc_lines(&attrs.attrs);
    let description = attrs.description.clone().unwrap_or_else(|| doc_summary(&attrs.attrs));
    let info = attrs.info.clone().unwrap_or_else(|| {
        let rest: Vec<_> = docs.iter().skip_while(|l| !l.is_empty()).skip(1).cloned().collect();
        rest.join("\n").trim().to_owned()
    });

    let mut ports = Vec::new();
    let mut plain = Vec::new();
    let fields = attrs.data.take_struct().map(|f| f.fields).unwrap_or_default();
    // darling does not tell whether `#[port]` was written; read it from the input.
    let written: Vec<bool> = match &input.data {
        syn::Data::Struct(s) => s.fields.iter().map(|f| f.attrs.iter().any(|a| a.path().is_ident("port"))).collect(),
        _ => Vec::new(),
    };
    for (i, mut field) in fields.into_iter().enumerate() {
        field.has_port_attr = written.get(i).copied().unwrap_or(false);
        let Some(ident) = field.ident.clone() else { continue };
        match port_kind(&field.ty) {
            Some(kind) => {
                if let Some(port) = errors.handle(check_port(field, ident, kind)) {
                    ports.push(port);
                }
            }
            None if field.has_port_attr => errors.push(
                Error::custom("a `#[port]` field must have type `Input<T>` or `Output<T>` (or `Output<T, R>`)").with_span(&field.ty),
            ),
            None => plain.push(Plain { field: ident, ty: field.ty }),
        }
    }
    let catches: Vec<_> = ports.iter().filter(|p| p.catch).collect();
    if let [_, second, ..] = catches.as_slice() {
        errors.push(Error::custom("only one port may `catch` the component's errors").with_span(&second.field));
    }
    errors.finish_with(Component {
        ident: attrs.ident,
        name,
        description,
        info,
        tags: attrs.tags.iter().map(LitStr::value).collect(),
        settings: attrs.settings,
        control: attrs.control,
        hooks: attrs.hooks.is_present(),
        ports,
        plain,
    })
}

fn check_port(field: FieldAttrs, ident: Ident, kind: Kind) -> Result<Port> {
    let mut errors = Error::accumulator();
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
    if name.starts_with('_') {
        errors.push(
            Error::custom(
                "port names starting with `_` are reserved for system ports; declare settings with \
                 `#[component(settings = Type)]` and controls with `#[component(control = Type)]`",
            )
            .with_span(&ident),
        );
    }
    if field.catch.is_present() && kind == Kind::Input {
        errors.push(
            Error::custom("`catch` belongs on an `Output<ErrorMessage>` port: it receives the component's failures")
                .with_span(&field.catch.span()),
        );
    }
    if let (Some(h), Kind::Output) = (&field.handler, kind) {
        errors.push(Error::custom("output ports have no handler: the component emits on them").with_span(h));
    }
    let label = match field.label {
        Some(l) => l,
        None => title_case(&name),
    };
    let default_position = if kind == Kind::Input { "Left" } else { "Right" };
    let handler = field.handler.unwrap_or_else(|| Ident::new(&format!("on_{name}"), ident.span()));
    errors.finish_with(Port {
        description: doc_summary(&field.attrs),
        field: ident,
        ty: field.ty,
        kind,
        name,
        label,
        position: field.position.map_or(default_position, |p| p.0),
        handler,
        catch: field.catch.is_present(),
    })
}

/// `Input<..>` or `Output<..>` by the last path segment; aliases are not followed.
pub fn port_kind(ty: &Type) -> Option<Kind> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    match last.ident.to_string().as_str() {
        "Input" => Some(Kind::Input),
        "Output" => Some(Kind::Output),
        _ => None,
    }
}

/// `http_request` -> `Http Request`.
fn title_case(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}
