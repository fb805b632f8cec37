//! JSON as the Go SDK writes and reads it: byte for byte what Go's JSON encoders
//! (encoding/json before Go 1.22, and goccy/go-json, which the Go SDK uses) write, and
//! Go's leniency on read (`null` for any field is its zero value).

use std::io;

use base64::{
    Engine as _,
    engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
};
use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// serde_json's compact output with Go's string escapes: `<`, `>`, `&`, U+2028 and
/// U+2029 escaped as `\u003c` and so on, and control characters other than `\n`,
/// `\r`, `\t` as `\u00XX` (serde_json writes `\b` and `\f`).
pub(crate) struct GoFormatter;

impl Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            let escape = match c {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            writer.write_all(&fragment.as_bytes()[start..i])?;
            writer.write_all(escape.as_bytes())?;
            start = i + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn write_char_escape<W: ?Sized + io::Write>(&mut self, writer: &mut W, escape: CharEscape) -> io::Result<()> {
        let byte = match escape {
            CharEscape::Backspace => 0x08,
            CharEscape::FormFeed => 0x0c,
            CharEscape::AsciiControl(b) => b,
            other => return CompactFormatter.write_char_escape(writer, other),
        };
        const HEX: &[u8; 16] = b"0123456789abcdef";
        writer.write_all(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(byte >> 4)],
            HEX[usize::from(byte & 0x0f)],
        ])
    }
}

/// `value` as Go's encoders write it.
pub(crate) fn to_go_json<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, GoFormatter))?;
    Ok(out)
}

/// `null` reads as the type's zero value, as Go reads it.
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A Go `[]byte`: standard base64 with padding. Go reads non-zero trailing bits too.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// serde for a Go `[]byte` field: a base64 string, `null` read as empty.
pub(crate) mod base64_bytes {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(data: &Bytes, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&BASE64.encode(data))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Bytes, D::Error> {
        let Some(text) = Option::<std::borrow::Cow<'de, str>>::deserialize(deserializer)? else {
            return Ok(Bytes::new());
        };
        BASE64
            .decode(text.as_bytes())
            .map(Bytes::from)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_go_escapes_them() {
        // Worked out with Go's stdlib encoding/json (Go 1.19, as goccy/go-json writes).
        let s =
            "POST <https://example.test/?a=1&b=2>: \"bad\"\n\tline \u{8}\u{c}\u{1}\u{1f} \u{2028}\u{2029} — é 😀 \\ /";
        let want = r#""POST \u003chttps://example.test/?a=1\u0026b=2\u003e: \"bad\"\n\tline \u0008\u000c\u0001\u001f \u2028\u2029 — é 😀 \\ /""#;
        let got = to_go_json(s).expect("json");
        assert_eq!(String::from_utf8_lossy(&got), want);
        let back: String = serde_json::from_slice(&got).expect("reads back");
        assert_eq!(back, s);
    }

    #[test]
    fn bytes_are_padded_standard_base64() {
        #[derive(Serialize, Deserialize)]
        struct B(#[serde(with = "base64_bytes")] Bytes);
        let json = to_go_json(&B(Bytes::from_static(&[0, 1, 2, 0xfe, 0xff, 0x80, b'"']))).expect("json");
        assert_eq!(json, br#""AAEC/v+AIg==""#);
        assert_eq!(to_go_json(&B(Bytes::new())).expect("json"), br#""""#);
        let B(read) = serde_json::from_slice(b"null").expect("null");
        assert!(read.is_empty());
        // Go accepts non-zero trailing bits ("QR==" is "QQ==" with one set).
        let B(read) = serde_json::from_slice(br#""QR==""#).expect("trailing bits");
        assert_eq!(&read[..], b"A");
        assert!(
            serde_json::from_slice::<B>(br#""QQ""#).is_err(),
            "Go requires the padding"
        );
        assert!(serde_json::from_slice::<B>(br#""Q@==""#).is_err());
    }
}
