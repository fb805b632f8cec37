//! What the server and the client share: headers as Go's `[{key, value}]` list.

use tiny_sdk::prelude::*;

/// One header: a name and one value (a header with several values is several entries).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Schema)]
pub struct Header {
    #[tiny(title = "Key", col_span = "col-span-6")]
    pub key: String,
    #[tiny(title = "Value", col_span = "col-span-6")]
    pub value: String,
}

/// `content-type` -> `Content-Type`, Go's canonical MIME header form.
pub fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = true;
    for c in name.chars() {
        out.push(if upper {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        });
        upper = c == '-';
    }
    out
}

/// A header map as Go's sorted `[{key, value}]` list, one entry per value.
pub fn to_list(map: &hyper::HeaderMap) -> Vec<Header> {
    let mut list: Vec<Header> = map
        .iter()
        .map(|(k, v)| Header {
            key: canonical(k.as_str()),
            value: String::from_utf8_lossy(v.as_bytes()).into_owned(),
        })
        .collect();
    // Stable: the values of one key keep their order.
    list.sort_by(|a, b| a.key.cmp(&b.key));
    list
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn canonical_names() {
        assert_eq!(canonical("content-type"), "Content-Type");
        assert_eq!(canonical("X-GITHUB-EVENT"), "X-Github-Event");
        assert_eq!(canonical("etag"), "Etag");
    }
}
