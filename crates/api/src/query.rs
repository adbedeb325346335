//! Percent-encoding of path segments and query values (RFC 3986 §2.1), one way for every
//! client and for nvod: what `nvo` escapes in a request, nvod's handlers read back.

/// `s` with every byte but the unreserved characters and `:`/`@` (RFC 3986 `pchar`)
/// percent-escaped: a path segment or a query value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query value decoded: `%XX` escapes, and `+` as a space (as HTML forms send it); `None`
/// for a `%` not followed by two hex digits or bytes that are not UTF-8.
pub fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_encoded_decodes_back() {
        for s in [
            "icmp and host 10.0.0.1",
            "port 53 && !tcp",
            "len+1",
            "drop,learn",
            "é%",
        ] {
            assert_eq!(decode(&encode(s)).as_deref(), Some(s), "{s}");
        }
        assert_eq!(encode("port 53 && !tcp"), "port%2053%20%26%26%20%21tcp");
        assert_eq!(encode("veth-a_1.x~:@"), "veth-a_1.x~:@");
        // A query value's `+` reads as a space: a literal one goes encoded.
        assert_eq!(encode("len+1"), "len%2B1");
    }

    #[test]
    fn forms_and_bad_escapes() {
        assert_eq!(decode("a+b%2Cc").as_deref(), Some("a b,c"));
        assert_eq!(decode("%2"), None);
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%FF"), None, "not UTF-8");
    }
}
