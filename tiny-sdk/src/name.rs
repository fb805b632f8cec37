//! Names compared on a hop's path: ports, and the fields an edge expression reads.

/// Whether `a` and `b` are the same name. The names compared per hop are short (`in`,
/// `out`, `body`), and for them a byte loop costs less than the call to `memcmp` that
/// `==` makes.
#[inline]
pub(crate) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if a.len() > 16 {
        return a == b;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn names_are_the_same_exactly_when_equal() {
        let names = [
            "",
            "a",
            "b",
            "in",
            "out",
            "body",
            "bodx",
            "a_much_longer_port_name",
            "a_much_longer_port_namf",
        ];
        for a in names {
            for b in names {
                assert_eq!(same(a, b), a == b, "{a:?} against {b:?}");
            }
        }
        assert!(!same("out", "output"));
    }
}
