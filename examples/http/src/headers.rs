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
    let mut upper = true;
    // Byte by byte: only ASCII letters change case, so the text stays UTF-8.
    let bytes = name
        .bytes()
        .map(|b| {
            let out = if upper {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            };
            upper = b == b'-';
            out
        })
        .collect();
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A header map as Go's sorted `[{key, value}]` list, one entry per value.
pub fn to_list(map: &hyper::HeaderMap) -> Vec<Header> {
    to_list_without(map, None)
}

/// [`to_list`] leaving out the header `skip` (a lowercase name).
pub fn to_list_without(map: &hyper::HeaderMap, skip: Option<&hyper::header::HeaderName>) -> Vec<Header> {
    let mut list: Vec<Header> = map
        .iter()
        .filter(|(k, _)| Some(*k) != skip)
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
        assert_eq!(canonical("x-ünïcode-é"), "X-ünïcode-é");
        assert_eq!(canonical("-a--b"), "-A--B");
    }
}
