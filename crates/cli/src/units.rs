//! Parsing and printing of sizes given on the command line.

/// Parses a byte size: a number with an optional unit `B`, `KiB`/`K`, `MiB`/`M`, `GiB`/`G`
/// (binary multiples; case-insensitive; `KB`, `MB`, `GB` are read as binary too, as
/// PostgreSQL's and MariaDB's settings read them).
///
/// Errors: a message naming the value and the accepted forms.
pub fn parse_size_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size; expected e.g. 8192, 64KiB, 128MiB, 1GiB"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit '{other}' in '{s}'; use B, KiB, MiB or GiB"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

/// A byte size in the largest binary unit that divides it (`8MiB`, `1536KiB`, `100B`):
/// the inverse of [`parse_size_bytes`].
pub fn format_size_bytes(n: u64) -> String {
    for (unit, m) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= m && n.is_multiple_of(m) {
            return format!("{}{unit}", n / m);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_sizes_parse_back() {
        for n in [0, 100, 8 << 20, 1536 << 10, 3 << 30, 12345] {
            assert_eq!(parse_size_bytes(&format_size_bytes(n)).unwrap(), n);
        }
        assert_eq!(format_size_bytes(8 << 20), "8MiB");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("8192").unwrap(), 8192);
        assert_eq!(parse_size_bytes("64KiB").unwrap(), 65536);
        assert_eq!(parse_size_bytes("128mb").unwrap(), 128 << 20);
        assert_eq!(parse_size_bytes("1G").unwrap(), 1 << 30);
        assert!(parse_size_bytes("12 parsecs")
            .unwrap_err()
            .contains("parsecs"));
        assert!(parse_size_bytes("MiB").is_err());
    }
}
