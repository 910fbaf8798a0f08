//! The canonical form of a request's path, as a server that treats equivalent URLs alike
//! would see it: the form the site's model keys its pages by.

/// Decodes unreserved percent-escapes (`%7E` → `~`) and upper-cases the rest, as a server
/// that treats equivalent URLs alike would; the model's paths are in this form.
pub fn canonical_path(raw: &str) -> String {
    let (path, query) = match raw.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (raw, None),
    };
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = &path[i + 1..i + 3];
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                if v.is_ascii_alphanumeric() || b"-._~".contains(&v) {
                    out.push(v as char);
                } else {
                    out.push('%');
                    out.push_str(&hex.to_ascii_uppercase());
                }
                i += 3;
                continue;
            }
        }
        if bytes[i].is_ascii() {
            out.push(bytes[i] as char);
        } else {
            out.push_str(&format!("%{:02X}", bytes[i]));
        }
        i += 1;
    }
    match query {
        Some(q) => format!("{out}?{q}"),
        None => out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_paths() {
        assert_eq!(canonical_path("/%7euser/a%2fb?q=%7e"), "/~user/a%2Fb?q=%7e");
        assert_eq!(canonical_path("/%70%41"), "/pA");
        assert_eq!(canonical_path("/bad%zz%4"), "/bad%zz%4");
    }
}
