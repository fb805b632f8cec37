//! `#[derive(Schema)]`: the `#[tiny(...)]` editor hints on message types.

use darling::{Error, FromDeriveInput, FromField, FromMeta, FromVariant, Result, ast};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Ident, LitStr, Type, Visibility};

use super::{
    CratePath,
    json::{Json, JsonList},
    serde_names, unknown,
};

/// The container: a struct or an enum.
#[derive(FromDeriveInput)]
#[darling(
    attributes(tiny),
    supports(struct_any, enum_any),
    forward_attrs(doc, serde, schemars)
)]
pub struct SchemaAttrs {
    pub ident: Ident,
    pub generics: syn::Generics,
    pub data: ast::Data<VariantHints, FieldHints>,
    pub attrs: Vec<Attribute>,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The type's serde impls do not keep `decode(encode(x)) == x` (hand-written
    /// ones, say): the engine then always passes it through JSON.
    pub lossy: super::Switch,
    /// The path of the SDK, for authors who rename or re-export it.
    #[darling(rename = "crate", default)]
    pub krate: CratePath,
}

/// One enum variant.
#[derive(FromVariant)]
#[darling(attributes(tiny), forward_attrs(doc, serde, schemars))]
pub struct VariantHints {
    pub ident: Ident,
    pub fields: ast::Fields<FieldHints>,
    pub attrs: Vec<Attribute>,
    /// The label shown for this value (`enumTitles`).
    pub title: Option<String>,
    pub description: Option<String>,
}

/// One field's hints. Each becomes a keyword of the field's schema.
#[derive(FromField)]
#[darling(attributes(tiny), forward_attrs(doc, serde, schemars))]
pub struct FieldHints {
    pub ident: Option<Ident>,
    pub vis: Visibility,
    pub ty: Type,
    pub attrs: Vec<Attribute>,
    /// Values may come from other nodes through expressions.
    pub configurable: super::Switch,
    /// The field's definition is offered to other nodes for mapping.
    pub shared: super::Switch,
    pub readonly: super::Switch,
    /// A credential: masked in status and traces.
    pub secret: super::Switch,
    pub title: Option<String>,
    pub description: Option<String>,
    pub default: Option<Json>,
    #[darling(rename = "enum")]
    pub enum_values: Option<JsonList>,
    pub enum_titles: Option<JsonList>,
    pub format: Option<LitStr>,
    pub tab: Option<String>,
    pub align: Option<LitStr>,
    pub col_span: Option<ColSpan>,
    pub property_order: Option<u32>,
    pub required_when: Option<Condition>,
    pub optional_when: Option<Condition>,
    pub language: Option<LitStr>,
}

/// Formats the editor renders, plus JSON Schema's own.
const FORMATS: &[&str] = &[
    "markdown",
    "textarea",
    "code",
    "password",
    "email",
    "uri",
    "date",
    "date-time",
    "time",
    "color",
    "base64",
    "radiobox",
    "select",
    "checkbox",
    "button",
    "uuid",
    "hostname",
    "ipv4",
    "ipv6",
    "uri-reference",
    "byte",
    "binary",
    "duration",
    "regex",
    "int32",
    "int64",
    "float",
    "double",
];

const ALIGNS: &[&str] = &["horizontal", "vertical", "left", "right", "center"];

const OPERATORS: &[&str] = &["===", "equal", "in", "isUndefined"];

/// `col_span = 6` or `col_span = "col-span-6"`, on the editor's 12-column grid.
#[derive(Debug, Clone)]
pub struct ColSpan(pub String);

impl FromMeta for ColSpan {
    fn from_expr(expr: &syn::Expr) -> Result<Self> {
        let n = match Json::from_expr(expr)? {
            Json::Number(n, _) => n.parse::<u8>().ok(),
            Json::String(s, _) => s.strip_prefix("col-span-").and_then(|n| n.parse::<u8>().ok()),
            _ => None,
        };
        match n {
            Some(n @ 1..=12) => Ok(ColSpan(format!("col-span-{n}"))),
            _ => Err(Error::custom("`col_span` is a width from 1 to 12 columns, e.g. `col_span = 6`").with_span(expr)),
        }
    }
}

/// `required_when("field", "===", value)`: a condition on a sibling field.
#[derive(Debug, Clone)]
pub struct Condition {
    pub field: String,
    pub field_span: Span,
    pub items: Vec<Json>,
}

impl FromMeta for Condition {
    fn from_meta(meta: &syn::Meta) -> Result<Self> {
        let JsonList(items, span) = JsonList::from_meta(meta)?;
        let usage =
            "expected `(\"sibling_field\", \"operator\", value)` with operator `===`, `equal`, `in` or `isUndefined`";
        let (Some(Json::String(field, field_span)), Some(op)) = (items.first(), items.get(1)) else {
            return Err(Error::custom(usage).with_span(&span));
        };
        let Some(op_str) = op.as_str() else {
            return Err(Error::custom(usage).with_span(&op.span()));
        };
        if !OPERATORS.contains(&op_str) {
            return Err(Error::custom(unknown("operator", op_str, OPERATORS)).with_span(&op.span()));
        }
        let wanted = if op_str == "isUndefined" { 2..=3 } else { 3..=3 };
        if !wanted.contains(&items.len()) {
            return Err(Error::custom(usage).with_span(&span));
        }
        if op_str == "in" && !matches!(items.get(2), Some(Json::Array(..))) {
            return Err(Error::custom("`in` takes a list of values: `[\"a\", \"b\"]`").with_span(&items[2].span()));
        }
        Ok(Condition {
            field: field.clone(),
            field_span: *field_span,
            items,
        })
    }
}

impl FieldHints {
    /// The schemars attribute carrying these hints, or nothing.
    pub fn schemars_attr(&self) -> TokenStream {
        let mut plain = Vec::new();
        let mut ext: Vec<(&str, TokenStream)> = Vec::new();
        if let Some(t) = &self.title {
            plain.push(quote!(title = #t));
        }
        if let Some(d) = &self.description {
            plain.push(quote!(description = #d));
        }
        for (flag, key) in [
            (&self.configurable, "configurable"),
            (&self.shared, "shared"),
            (&self.readonly, "readonly"),
            (&self.secret, "secret"),
        ] {
            if flag.is_present() {
                ext.push((key, quote!(true)));
            }
        }
        if let Some(v) = &self.default {
            ext.push(("default", quote!(#v)));
        }
        if let Some(JsonList(v, _)) = &self.enum_values {
            ext.push(("enum", quote!([#(#v),*])));
        }
        if let Some(JsonList(v, _)) = &self.enum_titles {
            ext.push(("enumTitles", quote!([#(#v),*])));
        }
        if let Some(f) = &self.format {
            ext.push(("format", quote!(#f)));
        }
        if let Some(t) = &self.tab {
            ext.push(("tab", quote!(#t)));
        }
        if let Some(a) = &self.align {
            ext.push(("align", quote!(#a)));
        }
        if let Some(ColSpan(c)) = &self.col_span {
            ext.push(("colSpan", quote!(#c)));
        }
        if let Some(o) = self.property_order {
            ext.push(("propertyOrder", quote!(#o)));
        }
        for (cond, key) in [
            (&self.required_when, "requiredWhen"),
            (&self.optional_when, "optionalWhen"),
        ] {
            if let Some(c) = cond {
                let items = &c.items;
                ext.push((key, quote!([#(#items),*])));
            }
        }
        if let Some(l) = &self.language {
            ext.push(("language", quote!(#l)));
        }
        if plain.is_empty() && ext.is_empty() {
            return TokenStream::new();
        }
        let ext = ext.iter().map(|(k, v)| quote!(#k = #v));
        let ext = if self.has_extensions() {
            quote!(extend(#(#ext),*))
        } else {
            TokenStream::new()
        };
        let sep = if !plain.is_empty() && self.has_extensions() {
            quote!(,)
        } else {
            TokenStream::new()
        };
        quote!(#[schemars(#(#plain),* #sep #ext)])
    }

    fn has_extensions(&self) -> bool {
        self.configurable.is_present()
            || self.shared.is_present()
            || self.readonly.is_present()
            || self.secret.is_present()
            || self.default.is_some()
            || self.enum_values.is_some()
            || self.enum_titles.is_some()
            || self.format.is_some()
            || self.tab.is_some()
            || self.align.is_some()
            || self.col_span.is_some()
            || self.property_order.is_some()
            || self.required_when.is_some()
            || self.optional_when.is_some()
            || self.language.is_some()
    }
}

/// Checks what darling cannot: values from closed sets, counts that must agree, and
/// conditions that name sibling fields.
pub fn check(attrs: &SchemaAttrs) -> Result<()> {
    let mut errors = Error::accumulator();
    if !attrs.generics.params.is_empty() {
        errors.push(
            Error::custom(
                "`#[derive(Schema)]` does not support generic types yet; derive `schemars::JsonSchema` for them",
            )
            .with_span(&attrs.generics),
        );
    }
    let rename_all = serde_names::rename_all(&attrs.attrs);
    match &attrs.data {
        ast::Data::Struct(fields) => check_fields(&mut errors, &fields.fields, rename_all.as_deref()),
        ast::Data::Enum(variants) => {
            for v in variants {
                check_fields(&mut errors, &v.fields.fields, None);
            }
        }
    }
    errors.finish()
}

fn check_fields(errors: &mut darling::error::Accumulator, fields: &[FieldHints], rename_all: Option<&str>) {
    let names: Vec<String> = fields
        .iter()
        .filter_map(|f| {
            f.ident
                .as_ref()
                .map(|i| serde_names::field_name(&f.attrs, &i.to_string(), rename_all))
        })
        .collect();
    for f in fields {
        if let Some(fmt) = &f.format
            && !FORMATS.contains(&fmt.value().as_str())
        {
            errors.push(Error::custom(unknown("format", &fmt.value(), FORMATS)).with_span(fmt));
        }
        if let Some(a) = &f.align
            && !ALIGNS.contains(&a.value().as_str())
        {
            errors.push(Error::custom(unknown("alignment", &a.value(), ALIGNS)).with_span(a));
        }
        if let Some(lang) = &f.language
            && f.format.as_ref().map(LitStr::value).as_deref() != Some("code")
        {
            errors.push(Error::custom("`language` applies to code editors: add `format = \"code\"`").with_span(lang));
        }
        if let (Some(JsonList(values, _)), Some(JsonList(titles, span))) = (&f.enum_values, &f.enum_titles)
            && values.len() != titles.len()
        {
            errors.push(
                Error::custom(format!(
                    "`enum_titles` has {} titles for {} `enum` values; give one title per value",
                    titles.len(),
                    values.len()
                ))
                .with_span(span),
            );
        }
        if let Some(JsonList(titles, _)) = &f.enum_titles {
            for t in titles.iter().filter(|t| t.as_str().is_none()) {
                errors.push(Error::custom("enum titles are strings").with_span(&t.span()));
            }
        }
        let own = f
            .ident
            .as_ref()
            .map(|i| serde_names::field_name(&f.attrs, &i.to_string(), rename_all));
        for cond in [&f.required_when, &f.optional_when].into_iter().flatten() {
            if own.as_deref() == Some(cond.field.as_str()) {
                errors.push(Error::custom("a field's condition must name another field").with_span(&cond.field_span));
            } else if !names.contains(&cond.field) {
                let alts: Vec<&str> = names.iter().map(String::as_str).collect();
                errors.push(Error::custom(unknown("sibling field", &cond.field, &alts)).with_span(&cond.field_span));
            }
        }
    }
}
