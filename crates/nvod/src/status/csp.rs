//! The status page's Content-Security-Policy. The page is one self-contained file with an
//! inline `<style>` and `<script>`; rather than allowing inline code in general
//! (`'unsafe-inline'`), the policy names the SHA-256 of exactly those two blocks (CSP Level 2,
//! "hash-source"), computed once from the embedded page. Everything else is `'self'` or
//! nothing: no other script, style, image, frame, form target or origin to fetch from, and no
//! inline event handler (`onclick=`...) would run.

use std::sync::OnceLock;

/// The `Content-Security-Policy` value for `page`.
pub fn policy(page: &str) -> String {
    let hashes = |tag: &str| -> String {
        blocks(page, tag)
            .map(|b| format!(" 'sha256-{}'", base64(&sha256(b.as_bytes()))))
            .collect()
    };
    format!(
        "default-src 'none'; script-src{}; style-src{}; connect-src 'self'; img-src 'self'; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        hashes("script"),
        hashes("style")
    )
}

/// The policy of the embedded page, computed once.
pub fn page_policy(page: &'static str) -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| policy(page))
}

/// The text between each `<tag>` (no attributes) and the next `</tag>`.
fn blocks<'a>(page: &'a str, tag: &str) -> impl Iterator<Item = &'a str> + 'a {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut rest = page;
    std::iter::from_fn(move || {
        let start = rest.find(&open)? + open.len();
        let len = rest[start..].find(&close)?;
        let block = &rest[start..start + len];
        rest = &rest[start + len + close.len()..];
        Some(block)
    })
}

/// SHA-256 (FIPS 180-4), by ring.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, data).as_ref());
    out
}

/// Base64 with padding (RFC 4648 §4), as CSP hash-sources are written.
pub fn base64(data: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha256_matches_the_fips_examples() {
        // FIPS 180-2, appendix B.1 and B.2; and the empty message.
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn base64_matches_rfc4648() {
        // RFC 4648 §10.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), coded);
        }
    }

    #[test]
    fn the_policy_names_each_inline_block_and_nothing_else() {
        let page = "<style>a{}</style><p>x</p><script>go()</script><script>more()</script>";
        let p = policy(page);
        let h = |s: &str| format!("'sha256-{}'", base64(&sha256(s.as_bytes())));
        assert!(
            p.contains(&format!("script-src {} {};", h("go()"), h("more()"))),
            "{p}"
        );
        assert!(p.contains(&format!("style-src {};", h("a{}"))), "{p}");
        assert!(p.starts_with("default-src 'none';"), "{p}");
        assert!(!p.contains("unsafe"), "{p}");
    }
}
