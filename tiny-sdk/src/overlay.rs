//! What a node's state and its raw metadata both keep of the node's
//! `status.metadata`: the values the watch last showed, with this replica's own
//! recent writes laid over them until the watch shows them too (or for at most
//! [`HOLD`]), so that a handler reads back what it wrote at once.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    time::{Duration, Instant},
};

/// How long this replica's own written values win over what the watch last showed.
pub(crate) const HOLD: Duration = Duration::from_secs(5);

/// The values last seen, and the recent writes over them (`None`: deleted).
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    seen: BTreeMap<String, String>,
    written: HashMap<String, (Option<String>, Instant)>,
}

impl Overlay {
    /// The value under `key` now, with `newer` (values not written yet) over all.
    pub(crate) fn current<'a>(&'a self, key: &str, newer: Option<&'a Option<String>>) -> Option<&'a String> {
        if let Some(value) = newer {
            return value.as_ref();
        }
        match self.written.get(key) {
            Some((value, at)) if at.elapsed() < HOLD => value.as_ref(),
            _ => self.seen.get(key),
        }
    }

    /// Every key that holds a value now, with `newer` laid over all.
    pub(crate) fn keys<'a>(&'a self, newer: impl IntoIterator<Item = (&'a String, &'a Option<String>)>) -> Vec<String> {
        let mut keys: BTreeSet<&String> = self.seen.keys().collect();
        let recent = self.written.iter().filter(|(_, (_, at))| at.elapsed() < HOLD);
        for (k, v) in recent.map(|(k, (v, _))| (k, v)).chain(newer) {
            if v.is_some() {
                keys.insert(k);
            } else {
                keys.remove(k);
            }
        }
        keys.into_iter().cloned().collect()
    }

    /// The bytes of every key and value but those of `left_out`, with `newer` over all.
    pub(crate) fn size_without<'a>(
        &'a self,
        left_out: impl Fn(&str) -> bool,
        newer: &'a BTreeMap<String, Option<String>>,
    ) -> usize {
        self.keys(newer)
            .iter()
            .filter(|k| !left_out(k))
            .filter_map(|k| self.current(k, newer.get(k.as_str())).map(|v| k.len() + v.len()))
            .sum()
    }

    /// Takes in what the watch shows now: a write it shows (or one too old to trust)
    /// is done.
    pub(crate) fn observe(&mut self, seen: BTreeMap<String, String>) {
        self.written
            .retain(|k, (v, at)| at.elapsed() < HOLD && seen.get(k) != v.as_ref());
        self.seen = seen;
    }

    /// `key` was written `value` now.
    pub(crate) fn wrote(&mut self, key: String, value: Option<String>) {
        self.written.insert(key, (value, Instant::now()));
    }

    /// The write of `key` did not land: what was seen holds again.
    pub(crate) fn unwrote(&mut self, key: &str) {
        self.written.remove(key);
    }

    /// In-process, memory is the store: `key` now holds `value` for good.
    pub(crate) fn store(&mut self, key: String, value: Option<String>) {
        self.written.remove(&key);
        match value {
            Some(v) => self.seen.insert(key, v),
            None => self.seen.remove(&key),
        };
    }
}
