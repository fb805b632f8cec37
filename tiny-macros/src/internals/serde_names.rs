//! The names serde gives fields, so that hints can refer to siblings by their JSON name.

use syn::{Attribute, LitStr};

/// `rename_all` of the container's `#[serde(...)]`, if any.
pub fn rename_all(attrs: &[Attribute]) -> Option<String> {
    find(attrs, "rename_all")
}

/// The serialised name of a field called `ident`.
pub fn field_name(attrs: &[Attribute], ident: &str, rename_all: Option<&str>) -> String {
    if let Some(name) = find(attrs, "rename") {
        return name;
    }
    let ident = ident.strip_prefix("r#").unwrap_or(ident);
    match rename_all {
        Some(rule) => apply(rule, ident),
        None => ident.to_owned(),
    }
}

fn find(attrs: &[Attribute], key: &str) -> Option<String> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) {
                if let Ok(value) = meta.value() {
                    if let Ok(s) = value.parse::<LitStr>() {
                        found = Some(s.value());
                    }
                } else {
                    // `rename(serialize = "a", deserialize = "b")`: take `serialize`.
                    let _ = meta.parse_nested_meta(|inner| {
                        let v = inner.value()?.parse::<LitStr>()?;
                        if inner.path.is_ident("serialize") {
                            found = Some(v.value());
                        }
                        Ok(())
                    });
                }
            } else if let Ok(value) = meta.value() {
                // Skip the value of keys we do not read.
                let _ = value.parse::<proc_macro2::TokenStream>();
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.parse_nested_meta(|inner| {
                    if let Ok(v) = inner.value() {
                        let _ = v.parse::<proc_macro2::TokenStream>();
                    }
                    Ok(())
                });
            }
            Ok(())
        });
    }
    found
}

/// serde's `rename_all` rules, applied to a snake_case field name.
fn apply(rule: &str, field: &str) -> String {
    use heck::{
        ToKebabCase as _, ToLowerCamelCase as _, ToShoutyKebabCase as _, ToShoutySnakeCase as _, ToUpperCamelCase as _,
    };
    match rule {
        "lowercase" => field.to_lowercase(),
        "UPPERCASE" => field.to_uppercase(),
        "PascalCase" => field.to_upper_camel_case(),
        "camelCase" => field.to_lower_camel_case(),
        "SCREAMING_SNAKE_CASE" => field.to_shouty_snake_case(),
        "kebab-case" => field.to_kebab_case(),
        "SCREAMING-KEBAB-CASE" => field.to_shouty_kebab_case(),
        _ => field.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn rename_rules() {
        assert_eq!(apply("camelCase", "user_name_x"), "userNameX");
        assert_eq!(apply("PascalCase", "user_name"), "UserName");
        assert_eq!(apply("kebab-case", "user_name"), "user-name");
        assert_eq!(apply("SCREAMING_SNAKE_CASE", "user_name"), "USER_NAME");
    }
}
