//! `#[derive(Component)]`: the `#[component(...)]` and `#[port(...)]` attributes.
//!
//! Every mistake becomes one error on the author's token, with a suggestion where one
//! fits. Checks that only the type checker can make (is the message type a `Message`,
//! does the handler exist) are left to it, and the code generator places those errors
//! on the author's tokens too.

use darling::{Error, FromDeriveInput, FromField, FromMeta, Result, ast};
use proc_macro2::Span;
use quote::{ToTokens, format_ident};
use syn::{
    Attribute, Expr, GenericArgument, Ident, LitStr, Meta, PathArguments, Token, Type, ext::IdentExt as _,
    punctuated::Punctuated, spanned::Spanned,
};

use super::{CratePath, doc_lines, doc_summary, unknown};

/// The keys of `#[component(...)]`.
const COMPONENT_KEYS: [&str; 9] = [
    "name",
    "description",
    "info",
    "tags",
    "settings",
    "control",
    "hooks",
    "agent_tool",
    "crate",
];

/// `agent_tool(input = "in", output = "out", description = "...")`: the component
/// serves as an agent tool (Go's `AgentTool`); every key is optional.
#[derive(Debug, Default, FromMeta)]
pub struct AgentToolArg {
    /// The input port the call's payload arrives on; Go's default `in`.
    pub input: Option<LitStr>,
    /// The output port whose first emit is the answer; Go's default `out`.
    pub output: Option<LitStr>,
    /// What the agent reads; replaces the catalogue's `info` when not empty.
    pub description: Option<String>,
}

/// A checked `agent_tool(..)`: ports that exist, the right way round.
pub struct AgentTool {
    pub input: String,
    pub output: String,
    pub description: String,
}

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
    pub hooks: super::Switch,
    /// The component is an agent tool.
    pub agent_tool: Option<darling::util::SpannedValue<AgentToolArg>>,
    /// The path of the SDK, for authors who rename or re-export it.
    #[darling(rename = "crate", default)]
    pub krate: CratePath,
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
    pub catch: super::Switch,
    /// The settings' `bool` field that switches the port on.
    pub enabled_by: Option<Ident>,
    /// For an `Outputs<T>` family: the `fn(&Settings) -> Vec<String>` giving its keys.
    pub keys: Option<syn::Path>,
}

/// `position = Left`.
#[derive(Debug, Clone, Copy)]
pub struct PositionArg(pub &'static str);

const POSITIONS: [&str; 4] = ["Top", "Right", "Bottom", "Left"];

impl FromMeta for PositionArg {
    fn from_expr(expr: &Expr) -> Result<Self> {
        let name = match expr {
            Expr::Path(p) => p.path.get_ident().map(Ident::to_string),
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s), ..
            }) => Some(s.value()),
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

/// Input or output, read from the field's type (`Input<T>`, `Output<T, R>`,
/// `Outputs<T, R>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Input,
    Output,
    /// A family of outputs, one per key the settings give.
    Family,
}

/// A checked port.
pub struct Port {
    pub field: Ident,
    /// The field's type, `Input<T>` or `Output<T, R>`.
    pub ty: Type,
    /// `T`, as written.
    pub message: Option<Type>,
    /// `R` of `Output<T, R>`, as written.
    pub response: Option<Type>,
    /// Where the type checker's complaints about `T` and `R` belong: on `T`, or on
    /// `Output` when there is an `R` too.
    pub check_span: Span,
    pub kind: Kind,
    pub name: String,
    pub label: String,
    pub description: String,
    pub position: &'static str,
    pub handler: Ident,
    /// The span of `catch`, when the port catches the component's errors.
    pub catch: Option<Span>,
    /// The settings field that switches the port on.
    pub enabled_by: Option<Ident>,
    /// A family's keys function.
    pub keys: Option<syn::Path>,
}

/// A field that is not a port: initialised with `Default::default()`.
pub struct Plain {
    pub field: Ident,
    pub ty: Type,
}

/// Everything the code generator needs, checked.
pub struct Component {
    pub ident: Ident,
    /// What the generated code names the SDK by.
    pub krate: CratePath,
    pub name: String,
    pub description: String,
    pub info: String,
    pub tags: Vec<String>,
    pub settings: Option<Type>,
    pub control: Option<Type>,
    /// The span of `hooks`, when the component implements `Hooks` itself.
    pub hooks: Option<Span>,
    /// `agent_tool(..)`, checked.
    pub agent_tool: Option<AgentTool>,
    pub ports: Vec<Port>,
    pub plain: Vec<Plain>,
}

/// What stub impls need after a failed check, so that the author's code using
/// `Ctx<Self>` still type-checks and only the real mistake is reported.
#[derive(Default)]
pub struct StubInfo {
    pub krate: CratePath,
    pub settings: Option<Type>,
    pub control: Option<Type>,
    pub hooks: bool,
    /// The input ports, read from the fields as written: `(handler, message type)`, so
    /// that `#[handlers]` finds its handlers' ports after a mistake elsewhere too.
    pub inputs: Vec<(Ident, Type)>,
}

impl Component {
    /// Reads and checks the input, collecting every error rather than stopping at the
    /// first. On failure, also returns what stub impls need.
    pub fn from_input(input: &syn::DeriveInput) -> std::result::Result<Component, (Error, Box<StubInfo>)> {
        if let Err(e) = check_shape(input) {
            return Err((e, Box::new(StubInfo::lenient(input))));
        }
        let attrs = ComponentAttrs::from_derive_input(input).map_err(|e| (e, Box::new(StubInfo::lenient(input))))?;
        let stub = Box::new(StubInfo {
            krate: attrs.krate.clone(),
            settings: attrs.settings.clone(),
            control: attrs.control.clone(),
            hooks: attrs.hooks.is_present(),
            inputs: StubInfo::inputs(input),
        });
        check(attrs, input).map_err(|e| (e, stub))
    }
}

impl StubInfo {
    /// What stub impls need, read without darling, whose parse just failed: the
    /// author's code may use the settings type and implement `Hooks`.
    fn lenient(input: &syn::DeriveInput) -> StubInfo {
        let mut stub = StubInfo {
            krate: CratePath::lenient(&input.attrs, "component"),
            inputs: StubInfo::inputs(input),
            ..StubInfo::default()
        };
        let metas = input
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("component"))
            .filter_map(|a| a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated).ok())
            .flatten();
        for meta in metas {
            match &meta {
                Meta::Path(p)
                    if super::did_you_mean(
                        &p.get_ident().map(ToString::to_string).unwrap_or_default(),
                        COMPONENT_KEYS,
                    ) == Some("hooks") =>
                {
                    stub.hooks = true
                }
                Meta::NameValue(nv) => {
                    let ty = syn::parse2::<Type>(nv.value.to_token_stream()).ok();
                    // A misspelt key (`setings`) is the one error: read it as the key it
                    // is near, so that code using the settings type is not a second one.
                    let key = nv.path.get_ident().map(ToString::to_string).unwrap_or_default();
                    match super::did_you_mean(&key, COMPONENT_KEYS) {
                        Some("settings") => stub.settings = ty,
                        Some("control") => stub.control = ty,
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        stub
    }
}

impl StubInfo {
    /// The fields of type `Input<T>`, each with its handler: `handler = method` from
    /// `#[port(..)]` when it reads, else `on_<field>`.
    fn inputs(input: &syn::DeriveInput) -> Vec<(Ident, Type)> {
        let syn::Data::Struct(s) = &input.data else {
            return Vec::new();
        };
        s.fields
            .iter()
            .filter_map(|f| {
                let field = f.ident.as_ref()?;
                let Type::Path(p) = &f.ty else { return None };
                let last = p.path.segments.last().filter(|s| s.ident == "Input")?;
                let PathArguments::AngleBracketed(args) = &last.arguments else {
                    return None;
                };
                let Some(GenericArgument::Type(message)) = args.args.first() else {
                    return None;
                };
                let named = f
                    .attrs
                    .iter()
                    .filter(|a| a.path().is_ident("port"))
                    .filter_map(|a| a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated).ok())
                    .flatten()
                    .find_map(|m| match m {
                        Meta::NameValue(nv) if nv.path.is_ident("handler") => {
                            syn::parse2::<Ident>(nv.value.to_token_stream()).ok()
                        }
                        _ => None,
                    });
                let handler = named.unwrap_or_else(|| format_ident!("on_{}", field.unraw()));
                Some((handler, message.clone()))
            })
            .collect()
    }
}

/// A component is a struct with named fields (or none): its ports are named after
/// its fields. Checked before darling, whose message would point at the derive.
fn check_shape(input: &syn::DeriveInput) -> Result<()> {
    match &input.data {
        syn::Data::Struct(s) => match &s.fields {
            syn::Fields::Unnamed(f) => Err(Error::custom(
                "a component's ports are named after its fields: use named fields, e.g. \
                 `struct Hello { input: Input<Name>, greeting: Output<Greeting> }`",
            )
            .with_span(&f.paren_token.span.join())),
            _ => Ok(()),
        },
        syn::Data::Enum(e) => Err(Error::custom(
            "a component must be a struct: its fields are its ports (`Input<T>`, `Output<T>`) and its state",
        )
        .with_span(&e.enum_token)),
        syn::Data::Union(u) => Err(Error::custom(
            "a component must be a struct: its fields are its ports (`Input<T>`, `Output<T>`) and its state",
        )
        .with_span(&u.union_token)),
    }
}

fn check(attrs: ComponentAttrs, input: &syn::DeriveInput) -> Result<Component> {
    let mut errors = Error::accumulator();
    if let Some(param) = attrs.generics.params.first() {
        errors.push(
            Error::custom(
                "a component cannot be generic: the engine creates components by name; \
                 use a concrete type, or a trait object in a plain field",
            )
            .with_span(param),
        );
    }
    let name = match &attrs.name {
        Some(n) if n.value().trim().is_empty() => {
            errors.push(Error::custom("the component name must not be empty").with_span(n));
            String::new()
        }
        Some(n)
            if !n
                .value()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
        {
            let fixed: String = n
                .value()
                .trim()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
                .collect();
            errors.push(
                Error::custom(format!(
                    "a component name may hold only ASCII letters, digits, `_` and `-` (it becomes part of \
                     node names); try `name = \"{fixed}\"`"
                ))
                .with_span(n),
            );
            String::new()
        }
        Some(n) => n.value(),
        None => {
            errors.push(
                Error::custom(format!(
                    "missing component name: add `#[component(name = \"{}\")]`; the name is unique in its \
                     module and part of every node's name",
                    snake_case(&input.ident.to_string())
                ))
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
        syn::Data::Struct(s) => s
            .fields
            .iter()
            .map(|f| f.attrs.iter().any(|a| a.path().is_ident("port")))
            .collect(),
        _ => Vec::new(),
    };
    for (i, field) in fields.into_iter().enumerate() {
        let Some(ident) = field.ident.clone() else {
            continue;
        };
        match port_kind(&field.ty) {
            Some(kind) => {
                if let Some(port) = errors.handle(check_port(field, ident, kind)) {
                    ports.push(port);
                }
            }
            None if written.get(i).copied().unwrap_or(false) => errors.push(
                Error::custom(
                    "`#[port]` is for port fields, of type `Input<T>`, `Output<T>`, `Output<T, R>` or `Outputs<T>`; \
                     other fields are the component's state and take no attribute",
                )
                .with_span(&field.ty),
            ),
            None => plain.push(Plain {
                field: ident,
                ty: field.ty,
            }),
        }
    }
    if attrs.settings.is_none() {
        for p in &ports {
            if let Some(field) = &p.enabled_by {
                errors.push(
                    Error::custom(
                        "`enabled_by` names a `bool` field of the component's settings, and this component has \
                         none: add `#[component(settings = YourSettings)]`",
                    )
                    .with_span(field),
                );
            }
            if let Some(keys) = &p.keys {
                errors.push(
                    Error::custom(
                        "a port family's `keys` are read from the component's settings, and this component has \
                         none: add `#[component(settings = YourSettings)]`",
                    )
                    .with_span(keys),
                );
            }
        }
    }
    let catches: Vec<_> = ports
        .iter()
        .filter_map(|p| p.catch.map(|span| (span, &p.field)))
        .collect();
    if let [(_, first), (second, _), ..] = catches.as_slice() {
        errors.push(
            Error::custom(format!(
                "only one port may `catch` the component's errors, and `{first}` already does"
            ))
            .with_span(second),
        );
    }
    let agent_tool = attrs
        .agent_tool
        .as_ref()
        .and_then(|tool| errors.handle(check_agent_tool(tool, &ports)));
    errors.finish_with(Component {
        agent_tool,
        ident: attrs.ident,
        krate: attrs.krate,
        name,
        description,
        info,
        tags: attrs.tags.iter().map(LitStr::value).collect(),
        settings: attrs.settings,
        control: attrs.control,
        hooks: attrs.hooks.is_present().then(|| attrs.hooks.span()),
        ports,
        plain,
    })
}

/// The ports `agent_tool(..)` names must exist: `input` an input port, `output` a
/// single output port. A mistake is reported on the name written, or on `agent_tool`
/// for a default (`in`, `out`) the component lacks.
fn check_agent_tool(tool: &darling::util::SpannedValue<AgentToolArg>, ports: &[Port]) -> Result<AgentTool> {
    let mut errors = Error::accumulator();
    let mut one = |written: &Option<LitStr>, default: &str, want: Kind, what: &str| -> String {
        let name = written.as_ref().map_or_else(|| default.to_owned(), LitStr::value);
        let span = written.as_ref().map_or_else(|| tool.span(), LitStr::span);
        let fitting: Vec<&str> = ports
            .iter()
            .filter(|p| p.kind == want)
            .map(|p| p.name.as_str())
            .collect();
        if !fitting.contains(&name.as_str()) {
            let key = if want == Kind::Input { "input" } else { "output" };
            let other = ports.iter().find(|p| p.name == name);
            let why = match other {
                Some(_) => format!("`{name}` is not {what}"),
                None => format!("the component has no port `{name}`"),
            };
            let hint = match fitting.as_slice() {
                [] => format!("the component has no {what}"),
                some => format!(
                    "write `{key} = \"{}\"`{}",
                    some[0],
                    if some.len() > 1 {
                        format!(" (its {what}s: {})", some.join(", "))
                    } else {
                        String::new()
                    }
                ),
            };
            errors.push(Error::custom(format!("agent_tool: {why}; {hint}")).with_span(&span));
        }
        name
    };
    let input = one(&tool.input, "in", Kind::Input, "an input port");
    let output = one(&tool.output, "out", Kind::Output, "a single output port");
    errors.finish_with(AgentTool {
        input,
        output,
        description: tool.description.clone().unwrap_or_default(),
    })
}

fn check_port(field: FieldAttrs, ident: Ident, kind: Kind) -> Result<Port> {
    let mut errors = Error::accumulator();
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name).to_owned();
    if name.starts_with('_') {
        let suggestion = name.trim_start_matches('_');
        let suggestion = if suggestion.is_empty() { "port" } else { suggestion };
        errors.push(
            Error::custom(format!(
                "port names starting with `_` are reserved for system ports (`_settings`, `_control`, ...); \
                 rename the field, e.g. `{suggestion}`"
            ))
            .with_span(&ident),
        );
    }
    if field.catch.is_present() && kind == Kind::Input {
        errors.push(
            Error::custom(
                "`catch` belongs on an output port, `Output<ErrorMessage>`: it receives the component's \
                 failures, which the component then emits",
            )
            .with_span(&field.catch.span()),
        );
    }
    match (&field.keys, kind) {
        (None, Kind::Family) => errors.push(
            Error::custom(format!(
                "a port family needs its keys: add `keys = method`, where `fn method(settings: &Settings) -> \
                 Vec<String>` gives one key per port (`{name}_<key>`)"
            ))
            .with_span(&field.ty),
        ),
        (Some(keys), Kind::Input | Kind::Output) => errors.push(
            Error::custom("`keys` is for a port family, a field of type `Outputs<T>`; a single port has no keys")
                .with_span(keys),
        ),
        _ => {}
    }
    if let (Some(field_name), Kind::Family) = (&field.enabled_by, kind) {
        errors.push(
            Error::custom("a port family is switched by its keys: return none from `keys` instead of `enabled_by`")
                .with_span(field_name),
        );
    }
    if field.catch.is_present() && kind == Kind::Family {
        errors.push(
            Error::custom("`catch` belongs on a single `Output<ErrorMessage>`, not on a port family")
                .with_span(&field.catch.span()),
        );
    }
    if let (Some(h), Kind::Output | Kind::Family) = (&field.handler, kind) {
        errors.push(
            Error::custom("`handler` is for input ports: an output port has no handler, the component emits on it")
                .with_span(h),
        );
    }
    let label = match field.label {
        Some(l) => l,
        None => title_case(&name),
    };
    let default_position = if kind == Kind::Input { "Left" } else { "Right" };
    let handler = field
        .handler
        .unwrap_or_else(|| Ident::new(&format!("on_{name}"), ident.span()));
    let args = type_args(&field.ty);
    let check_span = match args.as_slice() {
        [message] => message.span(),
        _ => field.ty.span(),
    };
    let (message, response) = (args.first().copied().cloned(), args.get(1).copied().cloned());
    errors.finish_with(Port {
        description: doc_summary(&field.attrs),
        message,
        response,
        check_span,
        field: ident,
        ty: field.ty,
        kind,
        name,
        label,
        position: field.position.map_or(default_position, |p| p.0),
        handler,
        catch: field.catch.is_present().then(|| field.catch.span()),
        enabled_by: field.enabled_by,
        keys: field.keys,
    })
}

/// `Input<..>` or `Output<..>` by the last path segment; aliases are not followed.
pub fn port_kind(ty: &Type) -> Option<Kind> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    match last.ident.to_string().as_str() {
        "Input" => Some(Kind::Input),
        "Output" => Some(Kind::Output),
        "Outputs" => Some(Kind::Family),
        _ => None,
    }
}

/// The type arguments of the last path segment: `T` and `R` of `Output<T, R>`.
pub fn type_args(ty: &Type) -> Vec<&Type> {
    let Type::Path(p) = ty else { return Vec::new() };
    let Some(PathArguments::AngleBracketed(args)) = p.path.segments.last().map(|s| &s.arguments) else {
        return Vec::new();
    };
    args.args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// `http_request` -> `Http Request`.
fn title_case(name: &str) -> String {
    heck::ToTitleCase::to_title_case(name)
}

/// `HttpServer` -> `http_server`.
fn snake_case(name: &str) -> String {
    heck::ToSnakeCase::to_snake_case(name)
}

#[cfg(test)]
mod tests {
    use super::{snake_case, title_case};

    #[test]
    fn names() {
        assert_eq!(title_case("http_request"), "Http Request");
        assert_eq!(snake_case("HttpServer"), "http_server");
        assert_eq!(snake_case("Hello"), "hello");
    }
}
