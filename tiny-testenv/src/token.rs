//! Random bearer tokens, for the API server and the test broker.

use std::io::Read;

use crate::error::{Error, io_err};

/// A random bearer token (128 bits from the kernel, hex).
pub(crate) fn random_token() -> Result<String, Error> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(io_err("reading /dev/urandom"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
